import { MAX_RETRY_AFTER_MS, backoffDelayMs } from '../common/backoff';
import { RetryPolicy } from '../config/app-config';

/**
 * `Retry-After` in milliseconds from `now`: delta-seconds or an HTTP date.
 * Undefined when absent or unparseable; a date in the past is 0.
 */
export function parseRetryAfterMs(value: string | string[] | undefined, now: Date): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  // HTTP-date forms all start with a day name; Date.parse alone would read "-5" as a year.
  const at = /^[A-Za-z]{3}/.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

/**
 * When to try again. A destination that names a delay (429/503 Retry-After)
 * knows its own load better than our failure count: wait that long, up to a day.
 * One that names none (0, or a date its clock already passed) gets the backoff: else
 * each answer costs an attempt with no wait, and its entries run out of attempts in seconds.
 */
export { MAX_RETRY_AFTER_MS };

export function retryDelayMs(attempt: number, policy: RetryPolicy, retryAfterMs?: number, random?: () => number): number {
  // Bounded: a huge Retry-After must not park an entry for years (or overflow a Date).
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0) return Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return backoffDelayMs(attempt, policy, random);
}
