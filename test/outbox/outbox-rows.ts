import { Order } from '../../src/orders/orders.types';
import { TestDatabase } from '../support/test-database';

/** An order of tenant `acme` as a business transaction sees it after its payment: what the writer's effects are built from. */
export function paidOrder(id: string): Order {
  return {
    tenantId: 'acme',
    id,
    status: 'paid',
    providerPaymentId: `pi_${id}`,
    totalMinor: 4200,
    currency: 'eur',
    customerEmail: `buyer-${id}@example.com`,
    lastPaymentError: null,
    createdAt: new Date(),
    updatedAt: new Date(),
  };
}

/** Inserts an outbox row as the business transaction would (tests of the relay alone). */
export async function insertErpRow(db: TestDatabase, orderId: string, tenantId = 'acme'): Promise<string> {
  const key = `erp:order-paid:${tenantId}:${orderId}`;
  const payload = {
    operationKey: key,
    type: 'order.paid',
    tenantId,
    orderId,
    amountMinor: 4200,
    currency: 'eur',
    paymentId: `pi_${orderId}`,
    occurredAt: '2026-01-01T10:00:00.000Z',
  };
  await db.query(
    `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
     VALUES ($1, 'erp', 'order.paid', $2, $3, now() - interval '1 second')`,
    [key, tenantId, JSON.stringify(payload)],
  );
  return key;
}

export async function insertEmailRow(db: TestDatabase, orderId: string, tenantId = 'acme'): Promise<string> {
  const key = `email:receipt:${tenantId}:${orderId}`;
  const payload = { to: `buyer-${orderId}@example.com`, template: 'receipt', data: { orderId, amountMinor: 4200, currency: 'eur' } };
  await db.query(
    `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
     VALUES ($1, 'email', 'email.receipt', $2, $3, now() - interval '1 second')`,
    [key, tenantId, JSON.stringify(payload)],
  );
  return key;
}

export interface OutboxRow {
  status: string;
  attempts: number;
  next_attempt_at: Date;
  locked_by: string | null;
  last_error: string | null;
  last_status_code: number | null;
  outcome_unknown: boolean;
  delivered_at: Date | null;
}

export async function outboxRow(db: TestDatabase, key: string): Promise<OutboxRow> {
  const [row] = await db.query<OutboxRow>('SELECT * FROM outbox WHERE operation_key = $1', [key]);
  return row;
}
