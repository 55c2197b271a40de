import { MAX_RETRY_AFTER_MS, parseRetryAfterMs, retryDelayMs } from './retry-policy';

const policy = { baseMs: 1000, maxMs: 60_000 };

describe('parseRetryAfterMs', () => {
  const now = new Date('2026-01-01T00:00:00Z');

  it('reads delta-seconds', () => {
    expect(parseRetryAfterMs('120', now)).toBe(120_000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfterMs('Thu, 01 Jan 2026 00:02:00 GMT', now)).toBe(120_000);
    expect(parseRetryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
  });

  it('ignores absent or malformed values', () => {
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
    expect(parseRetryAfterMs('', now)).toBeUndefined();
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs('-5', now)).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  it('honours Retry-After over the backoff', () => {
    expect(retryDelayMs(1, policy, 120_000, () => 0.5)).toBe(120_000);
    expect(retryDelayMs(9, policy, 1_000, () => 0.5)).toBe(1_000);
  });

  it('caps Retry-After at a day and ignores one that is not a number', () => {
    expect(retryDelayMs(1, policy, 99_999_999_999_000, () => 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryDelayMs(2, policy, Infinity, () => 0.5)).toBe(1000);
  });

  it('falls back to the backoff', () => {
    expect(retryDelayMs(2, policy, undefined, () => 0.5)).toBe(1000);
  });

  it('falls back to the backoff when Retry-After names no wait (0, or a date already passed)', () => {
    expect(retryDelayMs(2, policy, 0, () => 0.5)).toBe(1000);
    const passed = parseRetryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT', new Date());
    expect(retryDelayMs(2, policy, passed, () => 0.5)).toBe(1000);
  });
});
