/** Base and cap of a backoff (the config's RetryPolicy has this shape). */
export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/**
 * Capped exponential backoff with full jitter: a delay drawn uniformly from
 * [0, min(maxMs, baseMs * 2^(attempt-1))], for the worker and the relay alike.
 * Full jitter spreads the retries of a whole backlog after an outage instead of
 * hitting the database or the ERP again in lockstep; the cap bounds the gap, so
 * recovery is noticed within RETRY_MAX_MS.
 * `attempt` is the number of the failed attempt, starting at 1.
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 52);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.floor(random() * ceiling);
}

/** The longest a sender's Retry-After is honoured: a huge one must not park work for years (or overflow a Date). */
export const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/**
 * The longest gap between two looks at a waiting event: what it may lag behind the event it waits
 * for once that one is applied (a refund behind its late payment).
 */
export const MAX_WAIT_LOOK_MS = 15 * 60_000;

/**
 * When an event that waits for another (WaitingError) is looked at again: 1/16 to 1/8 of its age
 * (an eighth, half of it jittered), at least the policy's base, at most its cap and
 * MAX_WAIT_LOOK_MS. Early waits (a checkout racing its webhook) retry within seconds; one that
 * has waited hours, every 7.5 to 15 minutes: a few hundred looks over Stripe's 3-day retry
 * window, each a claim, a rolled-back transaction and, on a confirming endpoint, a read of the
 * provider's API (the refund must be applied on what the provider says then, not hours before).
 */
export function waitDelayMs(ageMs: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, MAX_WAIT_LOOK_MS, Math.max(policy.baseMs, Math.floor(ageMs / 8)));
  return Math.floor(ceiling / 2 + (random() * ceiling) / 2);
}
