/**
 * The end-to-end floor: the product's own statements and exchanges at a steady rate with no
 * application in between, run as a process in place of the service (`--only=e2e --floor`).
 * Per event, as the product does it with every hand-over taken: one signed Stripe request
 * verified over its bytes and answered after its insert commits (acceptMany, already claimed
 * by the worker); the worker's transaction per coalescing gap of 10 ms in two round trips
 * (BEGIN and LOCK_ORDERS; TRANSITION_ORDERS, INSERT_OUTBOX with both entries handed over,
 * FINISH_MANY, HANDED_OUTBOX and COMMIT); the two deliveries on keep-alive sockets; one
 * RECORD_OUTCOMES per transaction. The statements are imported from src/, so the floor
 * follows them: it is the cost of this design's SQL and I/O, and the ratio of the product to
 * it is what the application costs on top.
 *
 * Left out, so it is a floor: Nest and TypeORM, the acceptance's checks and metrics beyond the
 * signature, the handler's decision (every order is awaiting payment), destination gates,
 * leases per gap (one lease each for the worker and the relay), logs, retries and failures.
 * Kept, because the product pays them on every event: its timeouts and its socket pools.
 *
 * Run as `node -r ts-node/register/transpile-only bench/lib/e2e-floor.ts` with DATABASE_URL,
 * PORT, ERP_URL and STRIPE_SECRET.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Client, Pool, PoolClient, QueryResult } from 'pg';
import { Pool as HttpPool } from 'undici';
import { acceptMany, FINISH_MANY } from '../../src/inbox/inbox.queries';
import { LOCK_ORDERS, TRANSITION_ORDERS } from '../../src/orders/orders.queries';
import { HANDED_OUTBOX, INSERT_OUTBOX, RECORD_OUTCOMES } from '../../src/outbox/outbox.queries';

const SECRET = process.env.STRIPE_SECRET!;
const SCOPE = 'acme:stripe:platform:test';
const COALESCE_MS = 10;
const WORKER_LEASE = 'floor-worker';
const FAR = new Date(Date.now() + 3_600_000);
const ACCEPT = acceptMany(1, true);
/**
 * FLOOR_MERGED=1: a design this floor can price before anyone builds it. Requests wait for the
 * gap's transaction, which inserts them (one statement) before its lock, and are answered after
 * its COMMIT: no autocommit insert per event. The happy path only: the bench sends no duplicate,
 * and a real design would need a fallback to a plain insert when the business transaction fails.
 */
const MERGED = process.env.FLOOR_MERGED === '1';

// As the product's pool and destinations are set up: a timer per query, one keep-alive pool per
// destination (ERP 16 sockets, e-mail 8), a cleared timer per delivery.
const db = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: 16,
  idleTimeoutMillis: 0,
  query_timeout: 30_000,
  pipeline: true,
} as ConstructorParameters<typeof Pool>[0]);
const destinations = new Map(
  Object.entries({ erp: 16, email: 8 }).map(([name, connections]) => [
    name,
    new HttpPool(process.env.ERP_URL!, { connections, keepAliveTimeout: 30_000, headersTimeout: 10_000, bodyTimeout: 10_000 }),
  ]),
);
const SOURCE_FACTS = JSON.stringify({ account: 'platform', livemode: false });

interface Accepted {
  id: string;
  order: string;
  payment: string;
  amount: number;
  currency: string;
  occurredAt: string;
  /** FLOOR_MERGED: the insert's values and the answer, both left to the worker's transaction. */
  values?: unknown[];
  res?: ServerResponse;
}

/** An outbox entry as HANDED_OUTBOX returns it (the columns the relay sends and records). */
interface Handed {
  id: string;
  operation_key: string;
  destination: string;
  payload: Record<string, unknown>;
  attempts: number;
}

/** One `value` per item of `list`: the statements' parallel arrays of a constant. */
const each = <T>(list: readonly unknown[], value: T): T[] => list.map(() => value);

/** Stripe's scheme: HMAC-SHA256 of `${t}.${body}`, compared in constant time, within 10 minutes. */
function verified(header: string | undefined, body: Buffer): boolean {
  const parts = new Map((header ?? '').split(',').map((kv) => kv.split('=', 2) as [string, string]));
  const t = parts.get('t');
  const v1 = parts.get('v1');
  if (!t || !v1 || Math.abs(Date.now() / 1000 - Number(t)) > 600) return false;
  const expected = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest();
  const given = Buffer.from(v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function insertValues(event: { id: string; type: string; created: number }, text: string, body: Buffer): unknown[] {
  return [
    SCOPE,
    event.id,
    'acme',
    'stripe',
    'stripe-acme',
    event.type,
    text,
    createHash('sha256').update(body).digest('hex'),
    'bench',
    'processing',
    null,
    null,
    null,
    null,
    SOURCE_FACTS,
    WORKER_LEASE,
    FAR,
    new Date(event.created * 1000),
  ];
}

async function accept(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  if (!verified(req.headers['stripe-signature'] as string | undefined, body)) {
    res.writeHead(400).end('{"reason":"signature_invalid"}');
    return;
  }
  const text = body.toString('utf8');
  const event = JSON.parse(text);
  const object = event.data.object;
  const accepted = {
    id: '',
    order: object.metadata.order_id,
    payment: object.id,
    amount: object.amount,
    currency: object.currency,
    occurredAt: new Date(event.created * 1000).toISOString(),
  };
  if (MERGED) {
    queue.push({ ...accepted, values: insertValues(event, text, body), res });
    wake();
    return;
  }
  const [row] = (await db.query({ name: 'accept', text: ACCEPT, values: insertValues(event, text, body) })).rows;
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"accepted"}');
  queue.push({ ...accepted, id: row.id });
  wake();
}

// ---- The worker: one transaction per coalescing gap, as WORKER_COALESCE_MS does ----

let queue: Accepted[] = [];
let lastStart = 0;
let timer: NodeJS.Timeout | undefined;

function wake(): void {
  if (timer) return;
  const wait = Math.max(0, lastStart + COALESCE_MS - performance.now());
  timer = setTimeout(() => {
    timer = undefined;
    lastStart = performance.now();
    const batch = queue;
    queue = [];
    void apply(batch).catch(failed);
  }, wait);
}

/** Sends `queries` in one write, pipelined; resolves with each one's rows. */
function pipelined(client: PoolClient | Client, queries: { name?: string; text: string; values?: unknown[] }[]): Promise<unknown[][]> {
  const stream = (client as unknown as { connection: { stream: NodeJS.WritableStream & { cork(): void; uncork(): void } } }).connection
    .stream;
  stream.cork();
  const answers = queries.map((q) => client.query(q).then((r: QueryResult) => r.rows));
  stream.uncork();
  return Promise.all(answers);
}

let transactions = 0;

async function apply(events: Accepted[]): Promise<void> {
  const client = await db.connect();
  const relayLease = `floor-relay:${++transactions}`;
  let handed: Handed[];
  try {
    const tenants = each(events, 'acme');
    const orders = events.map((e) => e.order);
    const inserts = MERGED
      ? [{ name: `accept_${events.length}`, text: acceptMany(events.length, true), values: events.flatMap((e) => e.values!) }]
      : [];
    const [, ...first] = await pipelined(client, [
      { text: 'BEGIN' },
      ...inserts,
      { name: 'lock', text: LOCK_ORDERS, values: [tenants, orders] },
    ]);
    const locked = first[first.length - 1];
    if (MERGED) {
      const ids = new Map((first[0] as { event_id: string; id: string }[]).map((r) => [r.event_id, r.id]));
      for (const e of events) e.id = ids.get(e.values![1] as string)!;
    }
    const byId = new Map((locked as { id: string; customer_email: string }[]).map((o) => [o.id, o]));
    const entries = events.flatMap((e) => {
      const erpKey = `erp:order-paid:acme:${e.order}`;
      return [
        {
          key: erpKey,
          destination: 'erp',
          type: 'order.paid',
          source: e.id,
          order: e.order,
          payload: {
            operationKey: erpKey,
            type: 'order.paid',
            tenantId: 'acme',
            orderId: e.order,
            amountMinor: e.amount,
            currency: e.currency,
            paymentId: e.payment,
            occurredAt: e.occurredAt,
          },
        },
        {
          key: `email:receipt:acme:${e.order}`,
          destination: 'email',
          type: 'email.receipt',
          source: e.id,
          order: e.order,
          payload: {
            to: byId.get(e.order)!.customer_email,
            template: 'receipt',
            data: { orderId: e.order, amountMinor: e.amount, currency: e.currency },
          },
        },
      ];
    });
    const now = new Date();
    const answers = await pipelined(client, [
      {
        name: 'transition',
        text: TRANSITION_ORDERS,
        values: [
          tenants,
          orders,
          events.map((e) => e.payment),
          events.map((e) => e.amount),
          events.map((e) => e.currency),
          each(events, 'awaiting_payment'),
          each(events, 'paid'),
          tenants,
          orders,
          events.map((e) => e.id),
          each(events, 'awaiting_payment'),
          each(events, 'paid'),
          events.length,
        ],
      },
      {
        name: 'outbox',
        text: INSERT_OUTBOX,
        values: [
          entries.map((x) => x.key),
          entries.map((x) => x.destination),
          entries.map((x) => x.type),
          each(entries, 'acme'),
          JSON.stringify(entries.map((x) => x.payload)),
          entries.map((x) => x.source),
          entries.map((x) => `order:${x.order}`),
          null,
          each(entries, true),
          relayLease,
          new Date(now.getTime() + 30_000),
        ],
      },
      { name: 'finish', text: FINISH_MANY, values: [events.map((e) => e.id), each(events, 'done'), each(events, null), now, WORKER_LEASE] },
      { name: 'handed', text: HANDED_OUTBOX, values: [relayLease] },
      { text: 'COMMIT' },
    ]);
    handed = answers[3] as typeof handed;
    if (handed.length !== entries.length) throw new Error(`${entries.length - handed.length} outbox entries not handed over`);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    for (const e of events) e.res?.writeHead(503).end('{"reason":"unavailable"}');
    throw error;
  } finally {
    client.release();
  }
  for (const e of events) e.res?.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"accepted"}');
  await deliver(relayLease, handed);
}

/** Work the floor skipped would make it look cheaper: any failure ends the run, loudly. */
function failed(error: Error): never {
  process.stderr.write(`e2e floor: ${error.message}\n`);
  process.exit(1);
}

// ---- The relay: the handed entries sent at once, their outcomes in one statement ----

async function deliver(lease: string, entries: Handed[]): Promise<void> {
  const codes = await Promise.all(
    entries.map(async (entry) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 10_000);
      try {
        const reply = await destinations.get(entry.destination)!.request({
          method: 'POST',
          path: `/${entry.destination}`,
          headers: { 'content-type': 'application/json', 'idempotency-key': entry.operation_key },
          body: JSON.stringify(entry.payload),
          signal: controller.signal,
        });
        await reply.body.dump();
        if (reply.statusCode !== 200) throw new Error(`the sink answered ${reply.statusCode}`);
        return reply.statusCode;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const { rowCount } = await db.query({
    name: 'record',
    text: RECORD_OUTCOMES,
    values: [
      entries.map((e) => e.id),
      entries.map((e) => e.attempts),
      each(entries, 'delivered'),
      each(entries, null),
      each(entries, null),
      codes,
      each(entries, false),
      lease,
      new Date(),
      each(entries, false),
      each(entries, 1),
      each(entries, null),
      each(entries, null),
    ],
  });
  if (rowCount !== entries.length) throw new Error(`${entries.length - (rowCount ?? 0)} outcomes not recorded`);
}

createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200).end('{"status":"ok"}');
    return;
  }
  accept(req, res).catch(failed);
}).listen(Number(process.env.PORT), '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
