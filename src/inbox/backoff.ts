import { RetryPolicy } from '../config/app-config';

/**
 * Capped exponential backoff with full jitter: a delay drawn uniformly from
 * [0, min(maxMs, baseMs * 2^(attempt-1))]. Full jitter spreads a burst of
 * failures (say, the ERP down for everyone) instead of retrying in lockstep.
 * `attempt` is the number of the failed attempt, starting at 1.
 */
export function backoffDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 52);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.floor(random() * ceiling);
}
