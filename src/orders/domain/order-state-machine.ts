/**
 * The order state machine, as pure functions: no Nest, no database.
 *
 *   awaiting_payment --payment_succeeded--> paid --refunded--> refunded
 *   awaiting_payment --payment_canceled---> canceled
 *   awaiting_payment --payment_failed-----> awaiting_payment (failure recorded)
 *
 * Anything that would move an order backwards is a no-op; a refund that
 * overtakes its payment waits for it.
 */

export type OrderStatus = 'awaiting_payment' | 'paid' | 'refunded' | 'canceled';
export type PaymentEventKind = 'payment_succeeded' | 'payment_failed' | 'payment_canceled' | 'refunded';

export type StatusStep =
  /** Move the order to `to`. */
  | { kind: 'move'; to: OrderStatus }
  /** Keep the status and record the payment failure. */
  | { kind: 'record_failure' }
  /** This event's change is already in place (a second event for the same change). */
  | { kind: 'already_applied' }
  /** The order is past this event (out-of-order delivery): nothing to do. */
  | { kind: 'stale' }
  /** The event is early (refund before payment): retry later. */
  | { kind: 'wait'; reason: 'order_not_paid_yet' }
  /** The event contradicts the order: an operator must look. */
  | { kind: 'conflict'; reason: 'order_canceled' };

const TABLE: Record<OrderStatus, Record<PaymentEventKind, StatusStep>> = {
  awaiting_payment: {
    payment_succeeded: { kind: 'move', to: 'paid' },
    payment_failed: { kind: 'record_failure' },
    payment_canceled: { kind: 'move', to: 'canceled' },
    refunded: { kind: 'wait', reason: 'order_not_paid_yet' },
  },
  paid: {
    payment_succeeded: { kind: 'already_applied' },
    payment_failed: { kind: 'stale' },
    payment_canceled: { kind: 'stale' },
    refunded: { kind: 'move', to: 'refunded' },
  },
  refunded: {
    payment_succeeded: { kind: 'stale' },
    payment_failed: { kind: 'stale' },
    payment_canceled: { kind: 'stale' },
    refunded: { kind: 'already_applied' },
  },
  canceled: {
    // Money taken for an order we canceled: never silently ignored.
    payment_succeeded: { kind: 'conflict', reason: 'order_canceled' },
    payment_failed: { kind: 'stale' },
    payment_canceled: { kind: 'already_applied' },
    refunded: { kind: 'stale' },
  },
};

/** What an event of `kind` does to an order in `status`, ignoring amounts and ids. */
export function transition(status: OrderStatus, kind: PaymentEventKind): StatusStep {
  return TABLE[status][kind];
}

export interface OrderFacts {
  status: OrderStatus;
  /** Null until the first matching event binds it. */
  providerPaymentId: string | null;
  totalMinor: number;
  currency: string;
}

export interface PaymentFacts {
  kind: PaymentEventKind;
  paymentId: string;
  /** The payment's amount in minor units. */
  amountMinor: number;
  currency: string;
  /** For refunds: how much of it was refunded. */
  refundedMinor?: number;
}

export type QuarantineReason = 'payment_mismatch' | 'currency_mismatch' | 'amount_mismatch' | 'partial_refund' | 'order_canceled';

export type Decision =
  | { kind: 'move'; from: OrderStatus; to: OrderStatus }
  | { kind: 'record_failure' }
  | { kind: 'noop'; reason: 'already_applied' | 'stale' }
  | { kind: 'wait'; reason: 'order_not_paid_yet' }
  | { kind: 'quarantine'; reason: QuarantineReason };

/**
 * The full decision for one payment event on one (locked) order. The event must
 * match the order's payment id (once bound), currency and amount before it may
 * change anything or count as an accepted duplicate; stale events are no-ops
 * whatever they carry, since they change nothing.
 */
export function decide(order: OrderFacts, event: PaymentFacts): Decision {
  const step = transition(order.status, event.kind);
  if (step.kind === 'stale') return { kind: 'noop', reason: 'stale' };
  if (step.kind === 'record_failure') {
    // A failure of some other payment attempt says nothing about this order.
    if (order.providerPaymentId !== null && order.providerPaymentId !== event.paymentId) return { kind: 'noop', reason: 'stale' };
    return step;
  }
  const mismatch = mismatchOf(order, event);
  if (mismatch) return { kind: 'quarantine', reason: mismatch };
  switch (step.kind) {
    case 'move':
      return { kind: 'move', from: order.status, to: step.to };
    case 'already_applied':
      return { kind: 'noop', reason: 'already_applied' };
    case 'wait':
      return step;
    case 'conflict':
      return { kind: 'quarantine', reason: step.reason };
  }
}

function mismatchOf(order: OrderFacts, event: PaymentFacts): QuarantineReason | undefined {
  if (order.providerPaymentId !== null && order.providerPaymentId !== event.paymentId) return 'payment_mismatch';
  if (order.currency !== event.currency.toLowerCase()) return 'currency_mismatch';
  if (order.totalMinor !== event.amountMinor) return 'amount_mismatch';
  if (event.kind === 'refunded' && event.refundedMinor !== undefined && event.refundedMinor !== order.totalMinor) {
    return event.refundedMinor < order.totalMinor ? 'partial_refund' : 'amount_mismatch';
  }
  return undefined;
}
