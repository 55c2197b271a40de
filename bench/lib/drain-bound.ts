import { Pool, PoolClient } from 'pg';

/**
 * The worker drain's upper bound: the drain's own statements with no application in
 * between, on the same backlog, with the same batch sizes (claims of 512, transactions of
 * 64, 8 lanes). Frozen as the product ran them at commit a121410 (2026-12-02), before the
 * efficiency work of issue 22: the bound must not move when the product's statements do,
 * so edit this file only to fix the bound itself, never to follow src/.
 *
 * What it leaves out, so it is a bound: the handler's parse and decision, the JSON of the
 * outbox payloads built once per batch rather than per event, logging, metrics, TypeORM's
 * transaction wrapper, and the wait between a claim and a free lane.
 */
const CLAIM = `
  WITH due AS (
    SELECT id FROM webhook_inbox
     WHERE status = 'pending' AND next_attempt_at <= greatest($1::timestamptz, now())
     ORDER BY next_attempt_at
     LIMIT $3
       FOR UPDATE SKIP LOCKED
  ), expired AS (
    SELECT id, locked_by FROM webhook_inbox
     WHERE status = 'processing' AND locked_until < $1
     ORDER BY locked_until
     LIMIT $3
       FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE webhook_inbox i
       SET status = 'processing',
           locked_by = $2,
           locked_until = $1::timestamptz + $4 * interval '1 millisecond',
           attempts = i.attempts + (i.status = 'processing')::int,
           last_error = CASE WHEN i.status = 'processing' THEN 'lease_expired' ELSE i.last_error END
     WHERE i.id IN (SELECT id FROM (SELECT id FROM due UNION ALL SELECT id FROM expired) AS picked LIMIT $3)
    RETURNING i.id, i.source_scope, i.event_id, i.tenant_id, i.provider, i.endpoint_id, i.event_type,
              i.payload, i.payload_sealed, i.payload_key_id, i.attempts, i.received_at, i.trace_context, i.source_facts
  ), lost AS (
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, error)
    SELECT c.id, c.attempts, $1, e.locked_by, 'lease_expired', 'lease_expired' FROM expired e JOIN claimed c ON c.id = e.id
  )
  SELECT * FROM claimed`;

const LOCK_ORDERS = `
  SELECT tenant_id, id, status, provider_payment_id, total_minor, currency, customer_email,
         last_payment_error, created_at, updated_at FROM orders
   WHERE (tenant_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
   ORDER BY tenant_id, id
     FOR UPDATE`;

const TRANSITION_ORDERS = `
  WITH moved AS (
    UPDATE orders o
       SET status = v.to_status,
           provider_payment_id = COALESCE(o.provider_payment_id, v.payment_id),
           updated_at = now()
      FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[])
           AS v(tenant_id, id, payment_id, total_minor, currency, from_status, to_status)
     WHERE o.tenant_id = v.tenant_id AND o.id = v.id
       AND (o.provider_payment_id IS NULL OR o.provider_payment_id = v.payment_id)
       AND o.total_minor = v.total_minor AND o.currency = v.currency AND o.status = v.from_status
    RETURNING 1
  ), steps AS (
    INSERT INTO order_transitions (tenant_id, order_id, inbox_id, from_status, to_status, at)
    SELECT *, now() FROM unnest($8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[])
  )
  SELECT count(*)::int AS n FROM moved`;

const INSERT_OUTBOX = `
  INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, source_event_id, aggregate, aggregate_seq, trace_context)
  SELECT v.operation_key, v.destination, v.operation_type, v.tenant_id, v.payload, v.source_event_id, v.aggregate,
         CASE WHEN v.aggregate IS NOT NULL THEN
           coalesce((SELECT max(e.aggregate_seq) FROM outbox e WHERE e.tenant_id = v.tenant_id AND e.aggregate = v.aggregate), 0)
           + row_number() OVER (PARTITION BY v.tenant_id, v.aggregate ORDER BY v.n)
         END,
         v.trace_context
    FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]),
                    jsonb_array_elements($5::jsonb), unnest($6::bigint[]), unnest($7::text[]), unnest($8::text[])) WITH ORDINALITY
      AS v(operation_key, destination, operation_type, tenant_id, payload, source_event_id, aggregate, trace_context, n)
  ON CONFLICT (operation_key) DO NOTHING
  RETURNING operation_key`;

const FINISH_MANY = `
  WITH finished AS (
    UPDATE webhook_inbox i
       SET status = v.status, status_reason = v.reason, completed_at = $4, locked_by = NULL, locked_until = NULL
      FROM unnest($1::bigint[], $2::text[], $3::text[]) AS v(id, status, reason)
     WHERE i.id = v.id AND i.locked_by = $5
    RETURNING i.id, i.attempts, v.status, v.reason
  ), history AS (
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, reason)
    SELECT id, attempts + 1, $4, $5, status, reason FROM finished
  )
  SELECT id FROM finished`;

const CLAIM_SIZE = 512;
const TRANSACTION_SIZE = 64;
const LANES = 8;
const LEASE_MS = 30_000;

interface Claimed {
  id: string;
  tenant_id: string;
  payload: { data: { object: { id: string; amount: number; currency: string; metadata: { order_id: string } } } };
}

/** Drains every due event of the bench's payment backlog (orders of 10.00 EUR awaiting payment). */
export async function drainBound(url: string): Promise<void> {
  const pool = new Pool({ connectionString: url, max: LANES + 1 });
  const queue: { lease: string; events: Claimed[] }[] = [];
  let claims = 0;
  let exhausted = false;
  let refilling: Promise<void> | undefined;
  const refill = async () => {
    const lease = `bound:${++claims}`;
    const { rows } = await pool.query({ name: 'claim', text: CLAIM, values: [new Date(), lease, CLAIM_SIZE, LEASE_MS] });
    if (rows.length === 0) exhausted = true;
    for (let i = 0; i < rows.length; i += TRANSACTION_SIZE) queue.push({ lease, events: rows.slice(i, i + TRANSACTION_SIZE) });
  };
  const lane = async () => {
    const client = await pool.connect();
    try {
      for (;;) {
        // Claim ahead while fewer batches than lanes wait, as the worker does.
        if (queue.length < LANES && !exhausted) refilling ??= refill().finally(() => (refilling = undefined));
        const batch = queue.shift();
        if (batch) await apply(client, batch.lease, batch.events);
        else if (exhausted) return;
        else await refilling;
      }
    } finally {
      client.release();
    }
  };
  try {
    await Promise.all(Array.from({ length: LANES }, lane));
  } finally {
    await pool.end();
  }
}

/** One batch's business transaction: lock, transition with history, two outbox rows per event, fenced completion. */
async function apply(client: PoolClient, lease: string, events: Claimed[]): Promise<void> {
  const tenants = events.map((e) => e.tenant_id);
  const orders = events.map((e) => e.payload.data.object.metadata.order_id);
  const payments = events.map((e) => e.payload.data.object.id);
  const n = events.length;
  const each = <T>(value: T) => Array<T>(n).fill(value);
  await client.query('BEGIN');
  try {
    await client.query({ name: 'orders_lock', text: LOCK_ORDERS, values: [tenants, orders] });
    await client.query({
      name: 'orders_transition',
      text: TRANSITION_ORDERS,
      values: [
        tenants,
        orders,
        payments,
        each(1000),
        each('eur'),
        each('awaiting_payment'),
        each('paid'),
        tenants,
        orders,
        events.map((e) => e.id),
        each('awaiting_payment'),
        each('paid'),
      ],
    });
    const keys: string[] = [];
    const payloads: unknown[] = [];
    for (const [i, order] of orders.entries()) {
      const erpKey = `erp:order-paid:${tenants[i]}:${order}`;
      keys.push(erpKey, `email:receipt:${tenants[i]}:${order}`);
      payloads.push(
        {
          operationKey: erpKey,
          type: 'order.paid',
          tenantId: tenants[i],
          orderId: order,
          amountMinor: 1000,
          currency: 'eur',
          paymentId: payments[i],
          occurredAt: '2026-09-21T12:53:20.000Z',
        },
        { to: 'c@example.com', template: 'receipt', data: { orderId: order, amountMinor: 1000, currency: 'eur' } },
      );
    }
    const pairs = <T>(erp: T, email: T) => events.flatMap(() => [erp, email]);
    const twice = <T>(values: T[]) => values.flatMap((v) => [v, v]);
    await client.query({
      name: 'outbox_insert',
      text: INSERT_OUTBOX,
      values: [
        keys,
        pairs('erp', 'email'),
        pairs('order.paid', 'email.receipt'),
        twice(tenants),
        JSON.stringify(payloads),
        twice(events.map((e) => e.id)),
        twice(orders.map((o) => `order:${o}`)),
        pairs(null, null),
      ],
    });
    await client.query({
      name: 'inbox_finish_many',
      text: FINISH_MANY,
      values: [events.map((e) => e.id), each('done'), each(null), new Date(), lease],
    });
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
