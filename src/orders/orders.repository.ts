import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { PermanentError, TransientError } from '../common/errors';
import { isExpectationFailed, isUniqueViolation } from '../common/database-errors';
import { UnitOfWork } from '../database/unit-of-work';
import { OrderStatus } from './domain/order-state-machine';
import {
  ERASE_CUSTOMER_EMAIL,
  ERASURE_LOCK_BY_EMAIL,
  ERASURE_LOCK_ORDER,
  INSERT_ORDER,
  LOCK_ORDERS,
  PRUNE_ORDERS,
  RECORD_PAYMENT_ERRORS,
  SELECT_ORDER,
  TRANSITION_ORDERS,
  TRANSITIONS_BY_EVENT,
  TRANSITIONS_WRITTEN_NOW,
} from './orders.queries';
import { CreateOrder, Order } from './orders.types';

interface OrderRow {
  tenant_id: string;
  id: string;
  status: OrderStatus;
  provider_payment_id: string | null;
  total_minor: string;
  currency: string;
  customer_email: string;
  last_payment_error: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface TransitionRequest {
  tenantId: string;
  orderId: string;
  paymentId: string;
  amountMinor: number;
  currency: string;
  from: OrderStatus;
  to: OrderStatus;
}

/** A step of an order's history, and when it committed. */
export interface OrderTransition {
  tenantId: string;
  orderId: string;
  from: OrderStatus;
  to: OrderStatus;
  at: Date;
}

/** One event's move of an order, for the order's history (several may make up one TransitionRequest). */
export interface TransitionStep {
  tenantId: string;
  orderId: string;
  inboxId: string;
  from: OrderStatus;
  to: OrderStatus;
}

/** The only owner of `orders` SQL. */
@Injectable()
export class OrdersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Erasure: locks the orders of a customer (by e-mail address, or one order) in `tx`; returns their keys. */
  async lockForErasure(
    tx: UnitOfWork,
    who: { email: string } | { tenantId: string; orderId: string },
  ): Promise<{ tenantId: string; orderId: string; customerEmail: string }[]> {
    const rows: { tenant_id: string; id: string; customer_email: string }[] =
      'email' in who ? await tx.query(ERASURE_LOCK_BY_EMAIL, [who.email]) : await tx.query(ERASURE_LOCK_ORDER, [who.tenantId, who.orderId]);
    return rows.map((r) => ({ tenantId: r.tenant_id, orderId: r.id, customerEmail: r.customer_email }));
  }

  /** Erasure: blanks the e-mail address of `orders` in `tx`. */
  async eraseCustomerEmail(tx: UnitOfWork, orders: { tenantId: string; orderId: string }[]): Promise<void> {
    await tx.query(ERASE_CUSTOMER_EMAIL, [orders.map((o) => o.tenantId), orders.map((o) => o.orderId)]);
  }

  /** Retention: deletes up to `limit` orders unchanged since `before`, with their transitions. */
  async prune(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(PRUNE_ORDERS, [before, limit]);
    return rows[0].n;
  }

  /** Undefined when an order with this id already exists for the tenant. */
  async insert(o: CreateOrder, tx: UnitOfWork): Promise<Order | undefined> {
    const rows: OrderRow[] = await tx.query(INSERT_ORDER, [
      o.tenantId,
      o.id,
      o.providerPaymentId ?? null,
      o.totalMinor,
      o.currency,
      o.customerEmail,
    ]);
    return rows[0] && toOrder(rows[0]);
  }

  async find(tenantId: string, id: string): Promise<Order | undefined> {
    const rows: OrderRow[] = await this.dataSource.query(SELECT_ORDER, [tenantId, id]);
    return rows[0] && toOrder(rows[0]);
  }

  async transitionsOfEvent(inboxId: string, tx?: UnitOfWork): Promise<OrderTransition[]> {
    const rows: { tenant_id: string; order_id: string; from_status: OrderStatus; to_status: OrderStatus; at: Date }[] = await (
      tx ?? this.dataSource
    ).query(tx ? TRANSITIONS_WRITTEN_NOW : TRANSITIONS_BY_EVENT, [inboxId]);
    return rows.map((r) => ({ tenantId: r.tenant_id, orderId: r.order_id, from: r.from_status, to: r.to_status, at: r.at }));
  }

  /** Locks the given orders (in key order) and returns those that exist, keyed by orderKey(). */
  async lockMany(tx: UnitOfWork, keys: { tenantId: string; orderId: string }[]): Promise<Map<string, Order>> {
    const rows = await tx.send<OrderRow>({
      name: 'orders_lock',
      text: LOCK_ORDERS,
      values: [keys.map((k) => k.tenantId), keys.map((k) => k.orderId)],
    });
    return new Map(rows.map((r) => [orderKey(r.tenant_id, r.id), toOrder(r)]));
  }

  /**
   * Applies every transition (at most one per order) and records each event's step in the
   * order's history. Sent in the transaction of `tx` without waiting (tx.send): if an order is
   * not what its transition expects, the transaction fails with a TransientError; if the payment
   * id belongs to another order of the tenant, with a PermanentError.
   */
  transitionMany(tx: UnitOfWork, transitions: TransitionRequest[], steps: TransitionStep[]): void {
    const values = [
      transitions.map((t) => t.tenantId),
      transitions.map((t) => t.orderId),
      transitions.map((t) => t.paymentId),
      transitions.map((t) => t.amountMinor),
      transitions.map((t) => t.currency),
      transitions.map((t) => t.from),
      transitions.map((t) => t.to),
      steps.map((t) => t.tenantId),
      steps.map((t) => t.orderId),
      steps.map((t) => t.inboxId),
      steps.map((t) => t.from),
      steps.map((t) => t.to),
      transitions.length,
    ];
    void tx.send({ name: 'orders_transition', text: TRANSITION_ORDERS, values }, (error) => {
      // Locked and just checked, so this means a bug or a writer outside the lock: roll back and retry rather than guess.
      if (isExpectationFailed(error, 'order_changed_concurrently')) return new TransientError('order_changed_concurrently');
      // No retry can change this. In a batch the whole transaction fails, and each event alone then finds its own outcome.
      if (isUniqueViolation(error, 'orders_payment'))
        return new PermanentError('payment_already_bound', 'the payment id belongs to another order');
      return error;
    });
  }

  /** At most one error per order; sent in the transaction of `tx` without waiting (tx.send). */
  recordPaymentErrors(tx: UnitOfWork, errors: { tenantId: string; orderId: string; error: string }[]): void {
    const values = [errors.map((e) => e.tenantId), errors.map((e) => e.orderId), errors.map((e) => e.error)];
    void tx.send({ name: 'orders_payment_errors', text: RECORD_PAYMENT_ERRORS, values });
  }
}

export function orderKey(tenantId: string, orderId: string): string {
  return `${tenantId}\u0000${orderId}`;
}

function toOrder(r: OrderRow): Order {
  return {
    tenantId: r.tenant_id,
    id: r.id,
    status: r.status,
    providerPaymentId: r.provider_payment_id,
    // bigint arrives as a string; amounts are validated as safe integers on the way in.
    totalMinor: Number(r.total_minor),
    currency: r.currency,
    customerEmail: r.customer_email,
    lastPaymentError: r.last_payment_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}
