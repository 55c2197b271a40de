import { InboxEvent } from '../inbox/inbox.types';
import { parsePaymentEvent } from './stripe-payment.handlers';

const receivedAt = new Date('2026-12-01T00:00:00Z');

function succeeded(created: unknown): InboxEvent {
  return {
    id: '1',
    sourceScope: 'stripe:acct',
    eventId: 'evt_1',
    tenantId: 't1',
    provider: 'stripe',
    endpointId: 'e1',
    eventType: 'payment_intent.succeeded',
    payload: { id: 'evt_1', created, data: { object: { id: 'pi_1', amount: 1200, currency: 'EUR', metadata: { order_id: 'o1' } } } },
    attempts: 0,
    receivedAt,
    lease: 'w:1',
  };
}

describe('parsePaymentEvent', () => {
  it('takes the time from created', () => {
    const parsed = parsePaymentEvent(succeeded(1_764_547_200));
    expect(parsed).toMatchObject({ ok: true, event: { occurredAt: '2025-12-01T00:00:00.000Z', facts: { currency: 'eur', amountMinor: 1200 } } });
  });

  // A signed event with a nonsense time must still be applied (or quarantined) at once, never throw and be retried.
  it.each([[8.64e15], [253_402_300_800], [-1], ['1764547200'], [1.5], [undefined]])('falls back to the receipt time for created = %p', (created) => {
    expect(parsePaymentEvent(succeeded(created))).toMatchObject({ ok: true, event: { occurredAt: receivedAt.toISOString() } });
  });

  it('rejects an amount that is not an integer', () => {
    const event = succeeded(1_764_547_200);
    event.payload.data.object.amount = '12.00';
    expect(parsePaymentEvent(event)).toEqual({ ok: false, reason: 'malformed_event' });
  });
});
