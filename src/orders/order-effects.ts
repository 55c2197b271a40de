import { OutboxWrite } from '../outbox/outbox-writer';
import { OrderStatus } from './domain/order-state-machine';
import { Order } from './orders.types';

export interface EffectContext {
  paymentId: string;
  /** ISO time of the business change (the provider event's `created`). */
  occurredAt: string;
  sourceEventId: string;
}

/**
 * The outbox entries of a transition. The operation keys are the uniqueness
 * boundary of each effect: two events for one change produce one entry each.
 * Every field is spelled out: a spread per entry is a measurable share of a
 * drain's CPU.
 */
/** Every operation key an order's effects may use (the erasure finds its outbox entries by them). */
export function operationKeysOf(tenantId: string, orderId: string): string[] {
  return [
    `erp:order-paid:${tenantId}:${orderId}`,
    `email:receipt:${tenantId}:${orderId}`,
    `erp:order-refunded:${tenantId}:${orderId}`,
    `email:refund:${tenantId}:${orderId}`,
  ];
}

export function effectsOf(order: Order, to: OrderStatus, ctx: EffectContext): OutboxWrite[] {
  const { tenantId, id: orderId, totalMinor: amountMinor, currency } = order;
  const { sourceEventId } = ctx;
  // Each destination receives an order's operations in the order they happened (paid before refunded).
  const aggregate = `order:${orderId}`;
  const erp = (kind: 'paid' | 'refunded'): OutboxWrite => {
    const operationKey = `erp:order-${kind}:${tenantId}:${orderId}`;
    const type = kind === 'paid' ? 'order.paid' : 'order.refunded';
    return {
      tenantId,
      sourceEventId,
      aggregate,
      destination: 'erp',
      operationKey,
      operationType: type,
      payload: { operationKey, type, tenantId, orderId, amountMinor, currency, paymentId: ctx.paymentId, occurredAt: ctx.occurredAt },
    };
  };
  const email = (template: 'receipt' | 'refund'): OutboxWrite => ({
    tenantId,
    sourceEventId,
    aggregate,
    destination: 'email',
    operationKey: `email:${template}:${tenantId}:${orderId}`,
    operationType: `email.${template}`,
    payload: { to: order.customerEmail, template, data: { orderId, amountMinor, currency } },
  });
  switch (to) {
    // An erased customer (empty address) gets no more e-mail.
    case 'paid':
      return order.customerEmail ? [erp('paid'), email('receipt')] : [erp('paid')];
    case 'refunded':
      return order.customerEmail ? [erp('refunded'), email('refund')] : [erp('refunded')];
    default:
      return [];
  }
}
