import { InboxEvent } from '../inbox/inbox.types';
import { confirmed, parsePaymentEvent } from './stripe-payment.handlers';

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
    sourceFacts: { account: 'platform', livemode: false },
    lease: 'w:1',
  };
}

describe('parsePaymentEvent', () => {
  it('takes the time from created', () => {
    const parsed = parsePaymentEvent(succeeded(1_764_547_200));
    expect(parsed).toMatchObject({
      ok: true,
      event: { occurredAt: '2025-12-01T00:00:00.000Z', facts: { currency: 'eur', amountMinor: 1200 } },
    });
  });

  // A signed event with a nonsense time must still be applied (or quarantined) at once, never throw and be retried.
  it.each([[8.64e15], [253_402_300_800], [-1], ['1764547200'], [1.5], [undefined]])(
    'falls back to the receipt time for created = %p',
    (created) => {
      expect(parsePaymentEvent(succeeded(created))).toMatchObject({ ok: true, event: { occurredAt: receivedAt.toISOString() } });
    },
  );

  it('rejects an amount that is not an integer', () => {
    const event = succeeded(1_764_547_200);
    event.payload.data.object.amount = '12.00';
    expect(parsePaymentEvent(event)).toEqual({ ok: false, reason: 'malformed_event' });
  });
});

describe("confirmed: the decision from the provider's reading", () => {
  const reading = (state: Record<string, string | number | boolean | null>, object = 'payment_intent') => ({
    object,
    id: 'pi_1',
    found: true,
    state,
    readAt: receivedAt.toISOString(),
  });
  const withReading = (r: ReturnType<typeof reading> | { object: string; id: string; found: false; readAt: string }) => {
    const event = { ...succeeded(1_764_547_200), confirmation: r };
    return confirmed(event, parsePaymentEvent(event));
  };

  it('takes amount and currency from the provider, not the body', () => {
    expect(withReading(reading({ status: 'succeeded', amount: 999, currency: 'USD' }))).toMatchObject({
      ok: true,
      event: { facts: { kind: 'payment_succeeded', amountMinor: 999, currency: 'usd' } },
    });
  });

  it.each([
    [
      { status: 'canceled', amount: 1200, currency: 'eur' },
      { ok: true, event: { facts: { kind: 'payment_canceled' } } },
    ],
    [
      { status: 'processing', amount: 1200, currency: 'eur' },
      { ok: false, wait: 'payment_not_confirmed' },
    ],
    [
      { status: 'requires_payment_method', amount: 1200, currency: 'eur' },
      { ok: false, wait: 'payment_not_confirmed' },
    ],
    [
      { status: 'succeeded', amount: '1200', currency: 'eur' },
      { ok: false, reason: 'provider_state_unreadable' },
    ],
  ])('a PaymentIntent %j gives %j', (state, expected) => {
    expect(withReading(reading(state))).toMatchObject(expected);
  });

  it('an object the provider does not know is quarantined', () => {
    expect(withReading({ object: 'payment_intent', id: 'pi_1', found: false, readAt: '' })).toEqual({
      ok: false,
      reason: 'provider_object_missing',
    });
  });

  it('a Charge refunds what its amount_refunded says; none yet waits; another intent is a mismatch', () => {
    const refund = (state: Record<string, string | number | boolean | null>) => {
      const event = succeeded(1_764_547_200);
      event.eventType = 'charge.refunded';
      event.payload.data.object = {
        id: 'ch_1',
        payment_intent: 'pi_1',
        amount: 1200,
        amount_refunded: 1200,
        currency: 'eur',
        metadata: { order_id: 'o1' },
      };
      const withCharge = { ...event, confirmation: reading(state, 'charge') };
      return confirmed(withCharge, parsePaymentEvent(withCharge));
    };
    expect(refund({ amount: 1200, currency: 'eur', amount_refunded: 300, payment_intent: 'pi_1' })).toMatchObject({
      ok: true,
      event: { facts: { refundedMinor: 300 } },
    });
    expect(refund({ amount: 1200, currency: 'eur', amount_refunded: 0, payment_intent: 'pi_1' })).toEqual({
      ok: false,
      wait: 'refund_not_confirmed',
    });
    expect(refund({ amount: 1200, currency: 'eur', amount_refunded: 1200, payment_intent: 'pi_2' })).toEqual({
      ok: false,
      reason: 'payment_mismatch',
    });
  });
});
