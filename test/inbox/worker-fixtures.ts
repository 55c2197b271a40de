import { Client } from 'pg';
import request from 'supertest';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { ForgottenDays, PayloadDays } from '../../src/inbox/payload-days';
import { OrdersService } from '../../src/orders/orders.service';
import { signStripe } from '../support/signers';
import { OPERATOR_TOKEN, TestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';

export const STRIPE_SECRET = 'whsec_worker_tests_0123456789';
export const TENANT = 'acme';
export const ENDPOINTS = [
  { id: 'stripe-acme', provider: 'stripe', tenantId: TENANT, secrets: [{ label: 'current', value: STRIPE_SECRET }] },
];

let seq = 0;
const uniq = () => `${Date.now().toString(36)}${(seq++).toString(36)}`;

export interface PaymentOpts {
  orderId: string;
  paymentId?: string;
  amount?: number;
  currency?: string;
  id?: string;
}

export function paymentIntentEvent(type: string, o: PaymentOpts): Record<string, unknown> {
  return {
    id: o.id ?? `evt_${uniq()}`,
    object: 'event',
    api_version: '2026-10-28',
    created: 1_790_000_000,
    livemode: false,
    type,
    data: {
      object: {
        id: o.paymentId ?? `pi_${o.orderId}`,
        object: 'payment_intent',
        amount: o.amount ?? 1000,
        currency: o.currency ?? 'eur',
        metadata: { order_id: o.orderId },
        ...(type === 'payment_intent.payment_failed'
          ? {
              last_payment_error: {
                code: 'card_declined',
                decline_code: 'insufficient_funds',
                message: 'Your card has insufficient funds.',
              },
            }
          : {}),
      },
    },
  };
}

export function chargeRefundedEvent(o: PaymentOpts & { refunded?: number }): Record<string, unknown> {
  return {
    id: o.id ?? `evt_${uniq()}`,
    object: 'event',
    api_version: '2026-10-28',
    created: 1_790_000_100,
    livemode: false,
    type: 'charge.refunded',
    data: {
      object: {
        id: `ch_${o.orderId}`,
        object: 'charge',
        amount: o.amount ?? 1000,
        amount_refunded: o.refunded ?? o.amount ?? 1000,
        currency: o.currency ?? 'eur',
        payment_intent: o.paymentId ?? `pi_${o.orderId}`,
        metadata: { order_id: o.orderId },
      },
    },
  };
}

/** Signs with the app's own clock (tests move it) and posts through the real HTTP path. */
export async function postStripe(t: TestApp, event: Record<string, unknown>, endpointId = 'stripe-acme'): Promise<void> {
  const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
  const res = await request(t.url).post(`/webhooks/${endpointId}`).set(signed.headers).send(signed.body);
  if (res.status !== 200 || res.body.status !== 'accepted') throw new Error(`not accepted: ${res.status} ${JSON.stringify(res.body)}`);
}

export function createOrder(t: TestApp, id: string, totalMinor = 1000, currency = 'eur'): Promise<unknown> {
  return t.app.get(OrdersService).create({ tenantId: TENANT, id, totalMinor, currency, customerEmail: `${id}@example.com` });
}

export function worker(t: TestApp): InboxWorker {
  return t.app.get(InboxWorker);
}

/** Runs the worker until a claim comes back empty. */
export function drain(t: TestApp): Promise<number> {
  return worker(t).drain();
}

/**
 * Every inbox row with its stored payload where it is: in its day (webhook_inbox_payloads)
 * or, a legacy row, in the row itself; for tests to read as `FROM ${STORED_PAYLOADS}`.
 */
export const STORED_PAYLOADS = `(
  SELECT i.id, i.event_id, i.event_type, i.status, i.payload_day,
         coalesce(wp.payload, i.payload) AS payload, coalesce(wp.payload_sealed, i.payload_sealed) AS payload_sealed,
         coalesce(wp.payload_key_id, i.payload_key_id) AS payload_key_id,
         (wp.inbox_id IS NOT NULL OR i.payload IS NOT NULL OR i.payload_sealed IS NOT NULL) AS has_payload
    FROM webhook_inbox i LEFT JOIN webhook_inbox_payloads wp ON wp.day = i.payload_day AND wp.inbox_id = i.id) stored`;

/** The inbox row of `eventId`, its payload columns read where the payload is (STORED_PAYLOADS). */
export async function inboxRow(db: TestDatabase, eventId: string): Promise<any> {
  const [row] = await db.query(
    `SELECT i.*, stored.payload, stored.payload_sealed, stored.payload_key_id, stored.has_payload
       FROM webhook_inbox i JOIN ${STORED_PAYLOADS} ON stored.id = i.id WHERE i.event_id = $1`,
    [eventId],
  );
  return row;
}

/** Changes the payload of `eventId` in its day: `set` is a SET list over webhook_inbox_payloads (params from $2). */
export async function setDayPayload(db: TestDatabase, eventId: string, set: string, params: unknown[] = []): Promise<void> {
  const changed = await db.query(
    `UPDATE webhook_inbox_payloads wp SET ${set} FROM webhook_inbox i
      WHERE wp.day = i.payload_day AND wp.inbox_id = i.id AND i.event_id = $1 RETURNING wp.inbox_id`,
    [eventId, ...params],
  );
  if (changed.length !== 1) throw new Error(`no day payload for ${eventId}`);
}

/**
 * Moves inbox rows (every one, or those of `eventIds`) `days` days into the past (negative:
 * into the future), their payload with them into the partition of that day (made if missing).
 */
export async function ageInbox(db: TestDatabase, days: number, eventIds?: string[]): Promise<void> {
  const which = `($2::text[] IS NULL OR i.event_id = ANY($2::text[]))`;
  await db.query(
    `SELECT webhook_inbox_payload_day(d) FROM (SELECT DISTINCT payload_day - $1::int AS d FROM webhook_inbox i
      WHERE payload_day IS NOT NULL AND ${which}) days`,
    [days, eventIds ?? null],
  );
  await db.query(
    `UPDATE webhook_inbox_payloads wp SET day = wp.day - $1::int FROM webhook_inbox i
      WHERE wp.day = i.payload_day AND wp.inbox_id = i.id AND ${which}`,
    [days, eventIds ?? null],
  );
  await db.query(
    `UPDATE webhook_inbox i SET payload_day = payload_day - $1::int, received_at = received_at - $1::int * interval '1 day' WHERE ${which}`,
    [days, eventIds ?? null],
  );
}

/** The sealed payload of `eventId` in its day, as an SQL expression over parameter `$n` (the event id). */
export function daySealedOf(param: string): string {
  return `(SELECT p.payload_sealed FROM webhook_inbox_payloads p JOIN webhook_inbox a ON p.day = a.payload_day AND p.inbox_id = a.id WHERE a.event_id = ${param})`;
}

export async function orderRow(db: TestDatabase, id: string): Promise<any> {
  const [row] = await db.query('SELECT * FROM orders WHERE tenant_id = $1 AND id = $2', [TENANT, id]);
  return row;
}

export function outboxRows(db: TestDatabase, orderId: string): Promise<any[]> {
  return db.query(`SELECT * FROM outbox WHERE operation_key LIKE '%:' || $1 ORDER BY operation_key`, [`${TENANT}:${orderId}`]);
}

/** `count` due payment events of `tenant` (at `endpoint`), inserted at once (a burst), oldest first by id. */
export async function burst(
  db: TestDatabase,
  tenant: string,
  count: number,
  prefix = tenant,
  endpoint = `stripe-${tenant}`,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sha256, verified_with, status)
     SELECT $1 || ':stripe', $2 || '_' || g, $1, 'stripe', $4, 'payment_intent.succeeded',
            jsonb_build_object('id', $2 || '_' || g, 'type', 'payment_intent.succeeded',
              'data', jsonb_build_object('object', jsonb_build_object('id', 'pi_' || $2 || g, 'amount', 1000, 'currency', 'eur',
                'metadata', jsonb_build_object('order_id', $2 || g)))),
            repeat('0', 64), 'test', 'pending'
       FROM generate_series(1, $3::int) g`,
    [tenant, prefix, count, endpoint],
  );
}

/** Today's UTC day by the database's clock, as `YYYY-MM-DD`. */
export async function databaseToday(db: TestDatabase): Promise<string> {
  return (await db.query(`SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS d`))[0].d;
}

/**
 * Forgets every payload day before today while row `rowId` (settled, its day past the window)
 * races it: after the day's open rows were counted and before its detach, an operator replays the
 * row; as the carry from the detached day runs, someone (a claim, an outcome) holds it. The day
 * is left detached, the row pointing at it, until the next run. Resolves with the run's result.
 */
export async function forgetWithRowHeldAtCarry(t: TestApp, db: TestDatabase, rowId: string): Promise<ForgottenDays> {
  const days = t.app.get(PayloadDays);
  const holder = new Client({ connectionString: db.url });
  await holder.connect();
  const detach = (days as unknown as { detach: (...args: unknown[]) => Promise<boolean> }).detach.bind(days);
  jest.spyOn(days as never, 'detach').mockImplementationOnce((async (...args: unknown[]) => {
    const replayed = await request(t.url)
      .post(`/admin/inbox/${rowId}/replay`)
      .set({ Authorization: `Bearer ${OPERATOR_TOKEN}` })
      .send({ reason: 'race' });
    expect(replayed.status).toBe(200);
    const detached = await detach(...args);
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM webhook_inbox WHERE id = $1 FOR UPDATE', [rowId]);
    return detached;
  }) as never);
  try {
    return await days.forgetBefore(await databaseToday(db), 1000);
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
}
