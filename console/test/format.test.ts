import { describe, expect, it } from 'vitest';
import { age, duration, instant, money, perMinute } from '../src/format';
import { describeEntry } from '../src/timeline';

describe('formatting', () => {
  it('ages and durations', () => {
    expect(age(0)).toBe('0s');
    expect(age(42)).toBe('42s');
    expect(age(125)).toBe('2m 5s');
    expect(age(7260)).toBe('2h 1m');
    expect(age(90_000)).toBe('1d 1h');
    expect(duration(12.4)).toBe('12 ms');
    expect(duration(1534)).toBe('1.53 s');
    expect(duration(null)).toBe('');
  });

  it('instants in UTC, rates and money', () => {
    expect(instant('2026-12-02T04:05:06.789Z')).toBe('2026-12-02 04:05:06.789 UTC');
    expect(instant(null)).toBe('');
    expect(perMinute(undefined)).toBe('–');
    expect(perMinute(3.25)).toBe('3.3/min');
    expect(money(4200, 'eur')).toBe('42.00 EUR');
  });
});

describe('timeline entries', () => {
  it('a delivery attempt names status, duration, outcome query and Retry-After', () => {
    const d = describeEntry({
      at: '2026-12-02T04:00:00Z',
      kind: 'delivery_attempt',
      detail: {
        attempt: 2,
        operationKey: 'erp:order-paid:acme:o1',
        outcome: 'retry',
        statusCode: 429,
        durationMs: 35,
        outcomeQuery: 'not_applied',
        retryAfterMs: 120000,
        instance: 'host:1:ab',
        error: 'HTTP 429',
      },
    });
    expect(d.title).toBe('Delivery attempt 2 of erp:order-paid:acme:o1: retry');
    expect(d.facts).toEqual([
      'HTTP: 429',
      'took: 35 ms',
      'outcome query: not_applied',
      'Retry-After: 120 s',
      'instance: host:1:ab',
      'error: HTTP 429',
    ]);
    expect(d.tone).toBe('warn');
  });

  it('a quarantining attempt is bad news, a transition good news', () => {
    expect(
      describeEntry({
        at: '',
        kind: 'attempt',
        detail: { attempt: 3, outcome: 'quarantined', reason: 'max_attempts', instance: 'w', error: null },
      }).tone,
    ).toBe('bad');
    expect(
      describeEntry({ at: '', kind: 'order_transition', detail: { tenantId: 'acme', orderId: 'o1', from: 'awaiting_payment', to: 'paid' } })
        .title,
    ).toBe('Order acme/o1: awaiting_payment → paid');
  });
});
