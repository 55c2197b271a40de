/**
 * The provider's API gave no answer about the object: down, 5xx, 429, a timeout,
 * or our key refused. Says nothing about the event, so it is never one of the
 * event's attempts: the event waits (`retryAfterMs` when the provider said how
 * long) and is read again.
 */
export class ProviderUnavailableError extends Error {
  constructor(
    /** `unavailable`, `rate_limited`, `timeout`, `credentials_refused`, `malformed_answer` (a list page that cannot be paged past). */
    readonly reason: string,
    /** The HTTP status, when there was one. */
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(status ? `${reason} (${status})` : reason);
    this.name = 'ProviderUnavailableError';
  }
}

/** `Retry-After` in seconds or as an HTTP date, in milliseconds from `now`; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d{1,7}$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The provider refused the request for another reason (4xx): an answer, so it counts as an attempt of the event. */
export class ProviderAnswerError extends Error {
  constructor(
    readonly status: number | undefined,
    readonly code: string | undefined,
  ) {
    super(`provider_refused_request (${status ?? '?'}${code ? ` ${code}` : ''})`);
    this.name = 'ProviderAnswerError';
  }
}
