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
 * When an event that waits for another (WaitingError) is looked at again: an eighth of its age,
 * between the policy's base and cap, half of it jittered. Early waits (a checkout racing its
 * webhook) retry within seconds; one that has waited a day retries every policy cap (an hour by
 * default), a few dozen looks over Stripe's 3-day retry window.
 */
export function waitDelayMs(ageMs: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, Math.max(policy.baseMs, Math.floor(ageMs / 8)));
  return Math.floor(ceiling / 2 + (random() * ceiling) / 2);
}
