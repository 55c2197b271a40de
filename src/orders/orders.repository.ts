import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { OrderStatus } from './domain/order-state-machine';
import { INSERT_ORDER, LOCK_ORDER, RECORD_PAYMENT_ERROR, SELECT_ORDER, TRANSITION_ORDER } from './orders.queries';
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

/** The only owner of `orders` SQL. */
@Injectable()
export class OrdersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Undefined when an order with this id already exists for the tenant. */
  async insert(o: CreateOrder, tx?: EntityManager): Promise<Order | undefined> {
    const rows: OrderRow[] = await (tx ?? this.dataSource).query(INSERT_ORDER, [
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

  async lock(tx: EntityManager, tenantId: string, id: string): Promise<Order | undefined> {
    const rows: OrderRow[] = await tx.query(LOCK_ORDER, [tenantId, id]);
    return rows[0] && toOrder(rows[0]);
  }

  /** Undefined when zero rows matched the conditions. */
  async transition(tx: EntityManager, t: TransitionRequest): Promise<Order | undefined> {
    const [rows]: [OrderRow[], number] = await tx.query(TRANSITION_ORDER, [
      t.tenantId,
      t.orderId,
      t.paymentId,
      t.amountMinor,
      t.currency,
      t.from,
      t.to,
    ]);
    return rows[0] && toOrder(rows[0]);
  }

  async recordPaymentError(tx: EntityManager, tenantId: string, id: string, error: string): Promise<boolean> {
    const [, count]: [unknown, number] = await tx.query(RECORD_PAYMENT_ERROR, [tenantId, id, error]);
    return count === 1;
  }
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
