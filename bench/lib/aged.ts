import { execFileSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { hostname } from 'node:os';
import { Client } from 'pg';
import { withClient, withDatabase } from './database';
import { round } from './stats';

/**
 * `--aged`: a database holding `days` of settled history at `rate` events/s, as a deployment
 * with the default retention holds it at steady state: every event's identity for the identity
 * window, payloads only for the payload window, a paid order, its transition and its two delivered
 * outbox entries (ERP, e-mail) with their attempts for each payment, ignored and quarantined events,
 * audit rows and reconciliation runs. Built once with `generate_series` and kept in its own database,
 * named by its parameters, so later runs reuse it.
 */
export interface AgedParams {
  days: number;
  /** Events per second of history (after the cap). */
  rate: number;
  /** Events in all: days x 86,400 x rate, at most the cap. */
  events: number;
  payloadDays: number;
  database: string;
}

/** The product's defaults (RETENTION_PAYLOAD_DAYS, RETENTION_IDENTITY_DAYS): what a steady state keeps. */
const PAYLOAD_DAYS = 7;
/** Built but kept free: a full build of 10M events takes about 31 GB with its WAL. */
const MIN_FREE_AFTER_BYTES = 20 * 1024 ** 3;
/** Bytes per event the build takes on disk, measured (3.0 KB kept) plus the WAL it leaves in place. */
const BUILD_BYTES_PER_EVENT = 3_600;
/**
 * Schema of the build: a database of an older layout is rebuilt, not reused (2: identity_at;
 * 3: payloads in webhook_inbox_payloads, by day; 4: attempt leases as wide as the service's on this host).
 */
const LAYOUT = 4;

/**
 * An attempt's lease as the worker and relay of this host write it (`<host>:<pid>:<8 hex>:<round>`), so
 * the history's attempt rows are as wide as the service's. With wider ones (a 40-character lease until
 * layout 4) every history page kept a hole the service's narrower rows fit, and each attempt the e2e
 * stage wrote went into its own old page: 0.4-1.2 full-page images per event, the history's shape
 * rather than its size (docs/performance.md, "At month scale").
 */
const leaseSql = (id: string) =>
  `'${hostname().replace(/'/g, '')}:' || (20000 + ${id} % 4) || ':' || left(md5(${id}::text), 8) || ':' || (1 + ${id} / 64)`;

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

export function agedParams(): AgedParams {
  const days = Number(arg('aged-days') ?? 30);
  const cap = Number(arg('aged-cap') ?? 10_000_000);
  const wanted = Number(arg('aged-rate') ?? 3.86);
  const events = Math.min(cap, Math.round(days * 86_400 * wanted));
  const rate = events / (days * 86_400);
  const database = arg('aged-db') ?? `wi_aged_v${LAYOUT}_${days}d_${events}`;
  return { days, rate, events, payloadDays: Math.min(PAYLOAD_DAYS, days), database };
}

const SCOPE = 'acme:stripe:platform:test';

/** The big tables' indexes and keys, dropped for the load and built again after it (sorting beats 10M random inserts). */
const BULK_TABLES = [
  'webhook_inbox',
  'webhook_inbox_attempts',
  'outbox',
  'outbox_attempts',
  'orders',
  'order_transitions',
  'admin_audit',
  'reconciliation_runs',
];

/**
 * Creates the aged database (migrations applied by `migrate`) unless one of the same parameters is there.
 * `payloadTemplate` is the ~1 KB Stripe event of the bench with `evt_SPLIT` and `ORDER_SPLIT` in it.
 */
export async function ensureAged(
  serverUrl: string,
  params: AgedParams,
  payloadTemplate: string,
  migrate: (url: string) => Promise<void>,
  log: (line: string) => void,
): Promise<{ url: string; built: boolean; bytes: number }> {
  const url = withDatabase(serverUrl, params.database);
  const exists = await withClient(
    serverUrl,
    async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [params.database])).rowCount === 1,
  );
  if (exists) {
    const complete = await withClient(
      url,
      async (c) => (await c.query(`SELECT to_regclass('bench_aged') IS NOT NULL AS ok`)).rows[0].ok as boolean,
    );
    if (complete) {
      const bytes = await withClient(url, async (c) =>
        Number((await c.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b),
      );
      log(`aged database ${params.database} reused (${round(bytes / 1024 ** 3, 1)} GiB)`);
      return { url, built: false, bytes };
    }
    log(`aged database ${params.database} is incomplete (an interrupted build): dropped`);
    await withClient(serverUrl, (c) => c.query(`DROP DATABASE "${params.database}" WITH (FORCE)`));
  }
  refuseWithoutRoom(params.events);
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE "${params.database}"`));
  await migrate(url);
  const started = performance.now();
  await withClient(url, (c) => buildHistory(c, params, payloadTemplate, log));
  const bytes = await withClient(url, async (c) => Number((await c.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b));
  log(
    `aged database ${params.database} built in ${round((performance.now() - started) / 60_000, 1)} min: ${round(bytes / 1024 ** 3, 1)} GiB`,
  );
  return { url, built: true, bytes };
}

/** Never fills the disk the machine shares: the build must leave 20 GB free. */
function refuseWithoutRoom(events: number): void {
  const fs = statfsSync(process.cwd());
  const free = fs.bavail * fs.bsize;
  const needed = events * BUILD_BYTES_PER_EVENT;
  if (free - needed < MIN_FREE_AFTER_BYTES) {
    const gib = (b: number) => round(b / 1024 ** 3, 1);
    throw new Error(
      `--aged: the build needs about ${gib(needed)} GiB and would leave ${gib(free - needed)} GiB free (of ${gib(free)}); ` +
        `at least ${gib(MIN_FREE_AFTER_BYTES)} must stay free. Lower --aged-cap or --aged-rate.`,
    );
  }
  process.stderr.write(
    `aged build: about ${round(needed / 1024 ** 3, 1)} GiB of ${round(free / 1024 ** 3, 1)} GiB free (df -h: ${execFileSync('df', ['-h', process.cwd()], { encoding: 'utf8' }).split('\n')[1]})\n`,
  );
}

/**
 * Fills the migrated database `c` is connected to with the history of `p` (see ensureAged). `endDaysAgo`
 * moves the whole history that many days into the past (the retention-rate stage: a day of events past
 * every retention window); 0, the aged database, ends it now.
 */
export async function buildHistory(
  c: Client,
  p: AgedParams,
  payloadTemplate: string,
  log: (line: string) => void,
  endDaysAgo = 0,
): Promise<void> {
  const step = async (what: string, sql: string, values: unknown[] = []) => {
    const t0 = performance.now();
    const { rowCount } = await c.query(sql, values);
    log(`  ${what}: ${rowCount ?? ''} rows in ${round((performance.now() - t0) / 1000, 0)} s`);
  };
  // Every index and key of the big tables, as the migrations made them, to build again after the load.
  const { rows: indexes } = await c.query(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def, con.conname, pg_get_constraintdef(con.oid) AS condef,
            i.indrelid::regclass::text AS tbl
       FROM pg_index i LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.contype IN ('p', 'u')
      WHERE i.indrelid::regclass::text = ANY($1)`,
    [BULK_TABLES],
  );
  for (const ix of indexes) {
    await c.query(ix.conname ? `ALTER TABLE ${ix.tbl} DROP CONSTRAINT ${ix.conname}` : `DROP INDEX ${ix.name}`);
  }
  const seconds = p.days * 86_400;
  await c.query(`CREATE TABLE bench_aged_building (history_end timestamptz, step double precision)`);
  await c.query(`INSERT INTO bench_aged_building VALUES (date_trunc('minute', now()) - make_interval(days => $2), $1)`, [
    seconds / p.events,
    endDaysAgo,
  ]);
  // Row g is received at history_end - days + g x step: ids follow time, as they do in production.
  // 0.1% quarantined, 19.9% ignored (no handler), 80% payments done.
  await step(
    'webhook_inbox',
    `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload_day, payload_sha256,
                                verified_with, status, status_reason, attempts, next_attempt_at, received_at, completed_at,
                                deliveries, last_delivery_at, identity_at)
     SELECT $1, e.event_id, 'acme', 'stripe', 'stripe-acme',
            CASE e.kind WHEN 'done' THEN 'payment_intent.succeeded' ELSE 'customer.updated' END,
            -- A quarantined event keeps its payload: retention carried it along to the oldest day still kept.
            CASE WHEN e.kind = 'quarantined' AND e.at < b.history_end - make_interval(days => $2)
                 THEN ((b.history_end - make_interval(days => $2)) AT TIME ZONE 'UTC')::date
                 ELSE (e.at AT TIME ZONE 'UTC')::date END,
            md5(e.event_id) || md5(e.at::text), 'bench', e.kind,
            CASE e.kind WHEN 'ignored' THEN 'no_handler' WHEN 'quarantined' THEN 'max_attempts' END,
            CASE e.kind WHEN 'quarantined' THEN 5 ELSE 1 END, e.at, e.at, e.at + interval '15 ms', 1, e.at,
            date_trunc('second', e.at) - interval '1 second'
       FROM bench_aged_building b,
            LATERAL (SELECT g, 'evt_' || left(md5(random()::text || g), 24) AS event_id,
                            b.history_end - make_interval(secs => ${seconds}) + make_interval(secs => g * b.step) AS at,
                            CASE WHEN g % 1000 = 0 THEN 'quarantined' WHEN g % 1000 < 200 THEN 'ignored' ELSE 'done' END AS kind
                       FROM generate_series(1, $3::bigint) g) e`,
    [SCOPE, p.payloadDays, p.events],
  );
  // The payloads of the payload window, each in its day's partition (made as the retention job makes them),
  // and the days the job makes ahead of today (the same days when the history ends now).
  await c.query(
    `SELECT webhook_inbox_payload_day(d::date) FROM bench_aged_building b,
            generate_series(((b.history_end - make_interval(days => $1)) AT TIME ZONE 'UTC')::date,
                            (b.history_end AT TIME ZONE 'UTC')::date, interval '1 day') d`,
    [p.payloadDays],
  );
  await c.query(
    `SELECT webhook_inbox_payload_day(d::date)
       FROM generate_series((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + 7, interval '1 day') d`,
  );
  await step(
    'webhook_inbox_payloads',
    `INSERT INTO webhook_inbox_payloads (day, inbox_id, payload)
     SELECT i.payload_day, i.id, replace(replace($1, 'evt_SPLIT', i.event_id), 'ORDER_SPLIT', 'ord_' || left(md5(i.event_id), 16))::jsonb
       FROM webhook_inbox i, bench_aged_building b
      WHERE i.payload_day >= ((b.history_end - make_interval(days => $2)) AT TIME ZONE 'UTC')::date
      ORDER BY i.payload_day, i.id`,
    [payloadTemplate, p.payloadDays],
  );
  await step(
    'webhook_inbox_attempts',
    `INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, reason)
     SELECT id, 1, completed_at, ${leaseSql('id')}, status, status_reason FROM webhook_inbox`,
  );
  await step(
    'orders',
    `INSERT INTO orders (tenant_id, id, status, provider_payment_id, total_minor, currency, customer_email, created_at, updated_at)
     SELECT 'acme', 'ord_' || left(md5(event_id), 16), 'paid', 'pi_' || left(md5(event_id || 'pi'), 24), 1000 + id % 90000, 'eur',
            'c' || (id % 1000000) || '@example.com', received_at - interval '3 minutes', completed_at
       FROM webhook_inbox WHERE status = 'done'`,
  );
  await step(
    'order_transitions',
    `INSERT INTO order_transitions (tenant_id, order_id, inbox_id, from_status, to_status, at)
     SELECT 'acme', 'ord_' || left(md5(event_id), 16), id, 'awaiting_payment', 'paid', completed_at FROM webhook_inbox WHERE status = 'done'`,
  );
  await step(
    'outbox',
    `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, attempts, next_attempt_at,
                         source_event_id, created_at, delivered_at, aggregate, aggregate_seq, last_status_code)
     SELECT k.dest || ':' || k.kind || ':acme:' || o.ord, k.dest, k.type, 'acme',
            CASE k.dest WHEN 'erp' THEN jsonb_build_object('operationKey', 'erp:order-paid:acme:' || o.ord, 'type', 'order.paid',
                   'tenantId', 'acme', 'orderId', o.ord, 'amountMinor', 1000 + o.id % 90000, 'currency', 'eur',
                   'paymentId', 'pi_' || left(md5(o.event_id || 'pi'), 24), 'occurredAt', o.received_at)
                 ELSE jsonb_build_object('to', 'c' || (o.id % 1000000) || '@example.com', 'template', 'receipt',
                   'data', jsonb_build_object('orderId', o.ord, 'amountMinor', 1000 + o.id % 90000, 'currency', 'eur')) END,
            'delivered', 1, o.completed_at, o.id, o.completed_at, o.completed_at + interval '20 ms', 'order:' || o.ord, k.seq, 200
       FROM (SELECT id, event_id, received_at, completed_at, 'ord_' || left(md5(event_id), 16) AS ord FROM webhook_inbox WHERE status = 'done') o,
            (VALUES ('erp', 'order-paid', 'order.paid', 1), ('email', 'receipt', 'email.receipt', 2)) k(dest, kind, type, seq)`,
  );
  await step(
    'outbox_attempts',
    `INSERT INTO outbox_attempts (outbox_id, attempt, at, lease, outcome, status_code, duration_ms)
     SELECT id, 1, delivered_at, ${leaseSql('id')}, 'delivered', 200, 5 + id % 40 FROM outbox`,
  );
  // An operator's few actions a day, and reconciliation every 5 minutes (288 runs a day) for the one endpoint.
  await step(
    'admin_audit',
    `INSERT INTO admin_audit (actor, role, action, target, reason, before_status, after_status, at)
     SELECT 'ops-' || (g % 5), 'operator', 'inbox.replay', 'inbox:' || (g * 997), 'customer asked', 'quarantined', 'pending',
            b.history_end - make_interval(secs => ${seconds}) + make_interval(secs => g * 432)
       FROM bench_aged_building b, generate_series(1, ${Math.ceil(p.days * 200)}) g`,
  );
  await step(
    'reconciliation_runs',
    `INSERT INTO reconciliation_runs (endpoint_id, requested_by, reason, advances_cursor, status, listed, api_calls,
                                      requested_at, started_at, finished_at, window_from, window_to)
     SELECT 'stripe-acme', 'schedule', 'scheduled', true, 'succeeded', 25, 1, t, t, t + interval '1 s', t - interval '10 minutes', t
       FROM bench_aged_building b,
            LATERAL (SELECT b.history_end - make_interval(secs => ${seconds}) + make_interval(secs => g * 300) AS t
                       FROM generate_series(1, ${Math.ceil(p.days * 288)}) g) r`,
  );
  // Sorted builds (about 90% full leaves) where a live table's random-key indexes sit near 70%: the random-key
  // indexes here are the smaller ones they would be; docs/performance.md says so beside the figures.
  await c.query("SET maintenance_work_mem = '512MB'");
  for (const ix of indexes) {
    const t0 = performance.now();
    await c.query(ix.conname ? `ALTER TABLE ${ix.tbl} ADD CONSTRAINT ${ix.conname} ${ix.condef}` : ix.def);
    log(`  index ${ix.name}: ${round((performance.now() - t0) / 1000, 0)} s`);
  }
  const t0 = performance.now();
  await c.query('VACUUM ANALYZE');
  log(`  VACUUM ANALYZE: ${round((performance.now() - t0) / 1000, 0)} s`);
  await c.query(`ALTER TABLE bench_aged_building RENAME TO bench_aged`);
  await c.query('CHECKPOINT');
}

/** When the aged history ends, and the seconds between two of its events. */
export function agedHistory(url: string): Promise<{ end: Date; step: number }> {
  return withClient(url, async (c) => {
    const {
      rows: [r],
    } = await c.query('SELECT history_end, step FROM bench_aged');
    return { end: r.history_end as Date, step: Number(r.step) };
  });
}
