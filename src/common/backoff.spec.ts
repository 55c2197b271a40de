import { backoffDelayMs, waitDelayMs } from './backoff';

const policy = { baseMs: 1000, maxMs: 60_000 };

describe('backoffDelayMs', () => {
  it('grows exponentially up to the cap (upper bound of the jitter)', () => {
    const top = () => 0.999999;
    expect(backoffDelayMs(1, policy, top)).toBe(999);
    expect(backoffDelayMs(2, policy, top)).toBe(1999);
    expect(backoffDelayMs(3, policy, top)).toBe(3999);
    expect(backoffDelayMs(6, policy, top)).toBe(31_999);
    expect(backoffDelayMs(7, policy, top)).toBe(59_999);
    expect(backoffDelayMs(500, policy, top)).toBe(59_999);
  });

  it('draws the full jitter range from zero', () => {
    expect(backoffDelayMs(5, policy, () => 0)).toBe(0);
    expect(backoffDelayMs(5, policy, () => 0.5)).toBe(8000);
  });

  it('stays within [0, ceiling] for random draws', () => {
    for (let attempt = 1; attempt <= 20; attempt++) {
      const d = backoffDelayMs(attempt, policy);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(Math.min(60_000, 1000 * 2 ** (attempt - 1)));
    }
  });

  it('treats attempt 0 like the first attempt', () => {
    expect(backoffDelayMs(0, policy, () => 0.999999)).toBe(999);
  });
});

describe('waitDelayMs', () => {
  it('is an eighth of the age, between the base and the cap, half of it jittered', () => {
    expect(waitDelayMs(0, policy, () => 0)).toBe(500);
    expect(waitDelayMs(80_000, policy, () => 0)).toBe(5000);
    expect(waitDelayMs(80_000, policy, () => 0.999999)).toBe(9999);
    expect(waitDelayMs(72 * 3600_000, policy, () => 0.999999)).toBe(59_999);
  });

  it('looks again within 15 minutes however long the policy cap (a refund lags its late payment that long at most)', () => {
    const hourCap = { baseMs: 1000, maxMs: 3600_000 };
    expect(waitDelayMs(40 * 60_000, hourCap, () => 0.999999)).toBe(299_999);
    expect(waitDelayMs(72 * 3600_000, hourCap, () => 0)).toBe(450_000);
    expect(waitDelayMs(72 * 3600_000, hourCap, () => 0.999999)).toBe(899_999);
  });
});
