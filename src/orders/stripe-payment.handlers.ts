import { Injectable } from '@nestjs/common';
import { LATEST_INSTANT_MS } from '../common/clock';
import { TransientError } from '../common/errors';
import { HandlerOutcome, InboxEvent } from '../inbox/inbox.types';
import { OnWebhookEvent } from '../inbox/on-webhook-event.decorator';
import { PaymentEventKind, PaymentFacts } from './domain/order-state-machine';
import { OrdersService, PaymentEvent } from './orders.service';
import { UnitOfWork } from '../database/unit-of-work';

/** Every payload path parsePaymentEvent reads: an endpoint's `omit` may not drop one (checked at start). */
export const PAYMENT_EVENT_READS = [
  'created',
  'data.object.id',
  'data.object.metadata.order_id',
  'data.object.amount',
  'data.object.currency',
  'data.object.payment_intent',
  'data.object.amount_refunded',
  'data.object.last_payment_error.code',
  'data.object.last_payment_error.decline_code',
] as const;

const PAYMENT_EVENT = { batch: true, reads: PAYMENT_EVENT_READS } as const;

export type Parsed =
  | { ok: true; event: PaymentEvent }
  /** Quarantine: retries will not change this. */
  | { ok: false; reason: string }
  /** Not yet: the provider does not (yet) confirm what the event says; retried with backoff. */
  | { ok: false; wait: string };

/**
 * Stripe payment events -> order transitions. The order is found by
 * `metadata.order_id`. One batch handler for the four types, so the worker can
 * apply a whole batch of payment events in a few statements, in claim order.
 */
@Injectable()
export class StripePaymentHandlers {
  constructor(private readonly orders: OrdersService) {}

  @OnWebhookEvent('stripe', 'payment_intent.succeeded', PAYMENT_EVENT)
  @OnWebhookEvent('stripe', 'payment_intent.payment_failed', PAYMENT_EVENT)
  @OnWebhookEvent('stripe', 'payment_intent.canceled', PAYMENT_EVENT)
  @OnWebhookEvent('stripe', 'charge.refunded', PAYMENT_EVENT)
  async apply(events: InboxEvent[], tx: UnitOfWork): Promise<(HandlerOutcome | Error)[]> {
    const parsed = events.map((e) => confirmed(e, parsePaymentEvent(e)));
    const valid = parsed.flatMap((p) => (p.ok ? [p.event] : []));
    const applied = valid.length > 0 ? await this.orders.applyPayments(tx, valid) : [];
    let next = 0;
    return parsed.map((p) => {
      if (p.ok) return applied[next++];
      if ('wait' in p) return new TransientError(p.wait);
      // A malformed event will not improve with retries.
      return { kind: 'quarantine', reason: p.reason };
    });
  }
}

/** The order transition a Stripe payment event asks for, or why it cannot be applied. */
export function parsePaymentEvent(event: InboxEvent): Parsed {
  switch (event.eventType) {
    case 'payment_intent.succeeded':
      return parsePaymentIntent(event, 'payment_succeeded');
    case 'payment_intent.payment_failed':
      return parsePaymentIntent(event, 'payment_failed');
    case 'payment_intent.canceled':
      return parsePaymentIntent(event, 'payment_canceled');
    default:
      return parseChargeRefunded(event);
  }
}

function parsePaymentIntent(event: InboxEvent, kind: PaymentEventKind): Parsed {
  const pi = event.payload?.data?.object;
  const parsed = paymentEvent(event, pi, pi?.id, kind);
  if (parsed.ok && kind === 'payment_failed') {
    const e = pi.last_payment_error;
    // Codes only: a decline message could quote customer data.
    parsed.event.failure =
      [e?.code, e?.decline_code]
        .filter((x) => typeof x === 'string')
        .join(':')
        .slice(0, 200) || 'payment_failed';
  }
  return parsed;
}

function parseChargeRefunded(event: InboxEvent): Parsed {
  const charge = event.payload?.data?.object;
  const pi = charge?.payment_intent;
  const parsed = paymentEvent(event, charge, typeof pi === 'string' ? pi : pi?.id, 'refunded');
  if (!parsed.ok) return parsed;
  if (!Number.isSafeInteger(charge.amount_refunded)) return { ok: false, reason: 'malformed_event' };
  parsed.event.facts.refundedMinor = charge.amount_refunded;
  return parsed;
}

/** The fields every payment event has; the parsers above add their own to the fresh result. */
function paymentEvent(event: InboxEvent, object: any, paymentId: unknown, kind: PaymentEventKind): Parsed {
  const orderId = object?.metadata?.order_id;
  if (typeof orderId !== 'string' || orderId === '') return { ok: false, reason: 'order_id_missing' };
  if (typeof paymentId !== 'string' || paymentId === '') return { ok: false, reason: 'payment_id_missing' };
  if (!Number.isSafeInteger(object.amount) || typeof object.currency !== 'string') return { ok: false, reason: 'malformed_event' };
  const occurredAt = stripeTime(event.payload.created) ?? event.receivedAt;
  const facts: PaymentFacts = { kind, paymentId, amountMinor: object.amount, currency: object.currency.toLowerCase() };
  return {
    ok: true,
    event: { tenantId: event.tenantId, orderId, facts, occurredAt: occurredAt.toISOString(), sourceEventId: event.id },
  };
}

/**
 * With a confirm read, the decision is taken from the provider's current state
 * (status, amount, currency), not from the body: a PaymentIntent that is not
 * `succeeded` pays nothing (`canceled` goes through the state machine as a
 * cancellation, so it never moves a paid order back), a Charge refunds only what
 * its `amount_refunded` says. Without a reading, the body as before.
 */
export function confirmed(inboxEvent: InboxEvent, parsed: Parsed): Parsed {
  const reading = inboxEvent.confirmation;
  if (!reading || !parsed.ok) return parsed;
  if (!reading.found) return { ok: false, reason: 'provider_object_missing' };
  const state = reading.state ?? {};
  if (!Number.isSafeInteger(state.amount) || typeof state.currency !== 'string') return { ok: false, reason: 'provider_state_unreadable' };
  const facts: PaymentFacts = { ...parsed.event.facts, amountMinor: state.amount as number, currency: state.currency.toLowerCase() };
  const event: PaymentEvent = { ...parsed.event, facts };
  if (reading.object === 'payment_intent') {
    if (state.status === 'succeeded') return { ok: true, event };
    if (state.status === 'canceled') return { ok: true, event: { ...event, facts: { ...facts, kind: 'payment_canceled' } } };
    return { ok: false, wait: 'payment_not_confirmed' };
  }
  if (typeof state.payment_intent === 'string' && state.payment_intent !== facts.paymentId)
    return { ok: false, reason: 'payment_mismatch' };
  const refunded = state.amount_refunded;
  if (!Number.isSafeInteger(refunded) || (refunded as number) <= 0) return { ok: false, wait: 'refund_not_confirmed' };
  facts.refundedMinor = refunded as number;
  return { ok: true, event };
}

/** Stripe's `created` (Unix seconds) as a Date; undefined when it is not a plausible timestamp. */
function stripeTime(created: unknown): Date | undefined {
  return Number.isSafeInteger(created) && (created as number) >= 0 && (created as number) * 1000 <= LATEST_INSTANT_MS
    ? new Date((created as number) * 1000)
    : undefined;
}
