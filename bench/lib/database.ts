import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { onlyPostgresServer } from './service';
import { Client } from 'pg';
import { createDataSource, runMigrations } from '../../src/database/data-source';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';

export interface BenchServer {
  /** postgres://... of the server's maintenance database. */
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
}

/** The server at DATABASE_URL, else a throw-away embedded PostgreSQL. */
export async function startServer(
  options: { statements?: boolean; keptDir?: string; settings?: Record<string, string> } = {},
): Promise<BenchServer> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, embedded: false, stop: async () => undefined };
  // `keptDir`: a server kept between runs (the aged history lives there); otherwise a throw-away one.
  const dir = join(__dirname, '..', '..', '.data', options.keptDir ?? `bench-postgres-${randomBytes(3).toString('hex')}`);
  const db = await startEmbeddedPostgres({
    dir,
    database: 'postgres',
    persistent: options.keptDir !== undefined,
    settings: {
      ...(options.statements ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track_planning': 'on' } : {}),
      ...options.settings,
    },
  });
  onlyPostgresServer(Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]));
  return { url: db.url, embedded: true, stop: db.stop };
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The product's migrations, applied to the database at `url`. */
export async function migrate(url: string): Promise<void> {
  const ds = createDataSource(url, 2);
  await ds.initialize();
  await runMigrations(ds);
  await ds.destroy();
}

/** A fresh database with the product's migrations applied. */
export async function freshDatabase(server: BenchServer, migrated = true): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `wi_bench_${randomBytes(4).toString('hex')}`;
  await withClient(server.url, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(server.url, name);
  if (migrated) await migrate(url);
  return { url, drop: () => withClient(server.url, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined) };
}

/** Orders o<from>..o<from + count - 1> of tenant `acme`, awaiting payment of 10.00 EUR. */
export async function seedOrders(url: string, from: number, count: number): Promise<void> {
  await withClient(url, (c) =>
    c.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email)
       SELECT 'acme', 'o' || g, 'awaiting_payment', 1000, 'eur', 'c' || g || '@example.com'
         FROM generate_series($1::int, $2::int) g`,
      [from, from + count - 1],
    ),
  );
}

/** Orders awaiting payment and one pending `payment_intent.succeeded` event each, as the worker finds them. */
export async function seedPaymentBacklog(url: string, from: number, count: number, status = 'pending', withOrders = true): Promise<void> {
  if (withOrders) await seedOrders(url, from, count);
  await withClient(url, async (c) => {
    await c.query(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
                                  payload_sha256, verified_with, status)
       SELECT 'acme:stripe:platform:test', 'evt_' || g, 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded',
              jsonb_build_object('id', 'evt_' || g, 'object', 'event', 'type', 'payment_intent.succeeded',
                'created', 1790000000, 'livemode', false,
                'data', jsonb_build_object('object', jsonb_build_object('id', 'pi_' || g, 'object', 'payment_intent',
                  'amount', 1000, 'amount_received', 1000, 'currency', 'eur',
                  'metadata', jsonb_build_object('order_id', 'o' || g)))),
              repeat('0', 64), 'bench', $3
         FROM generate_series($1::int, $2::int) g`,
      [from, from + count - 1, status],
    );
    await c.query(`SELECT pg_notify('webhook_inbox', NULL)`);
  });
}

/** What a drain left: inbox rows done, outbox rows written (past `since`: an aged database's history is not the drain's). */
export function drainOutcome(url: string, since = { inbox: 0, outbox: 0 }): Promise<{ done: number; effects: number }> {
  return withClient(url, async (c) => {
    const {
      rows: [r],
    } = await c.query(
      `SELECT (SELECT count(*)::int FROM webhook_inbox WHERE status = 'done' AND id > $1) AS done, (SELECT count(*)::int FROM outbox WHERE id > $2) AS effects`,
      [since.inbox, since.outbox],
    );
    return r as { done: number; effects: number };
  });
}

/**
 * Resolves with the elapsed seconds once no row of `table` is in `open` statuses.
 * One EXISTS per status reads that status's partial index, so polling every 20 ms
 * costs the database next to nothing (a count over the table cost it a quarter of its CPU).
 */
export function waitUntilNone(url: string, table: 'webhook_inbox' | 'outbox', open: string[]): Promise<number> {
  const none = open.map((status) => `NOT EXISTS (SELECT 1 FROM ${table} WHERE status = '${status}')`).join(' AND ');
  return waitForCount(url, `SELECT (${none})::int AS n`, 1);
}

/** Polls `sql` (returning one `n`) until it reaches `target`; resolves with the elapsed seconds. */
export async function waitForCount(url: string, sql: string, target: number, timeoutMs = 600_000): Promise<number> {
  const started = process.hrtime.bigint();
  return withClient(url, async (c) => {
    for (;;) {
      const { rows } = await c.query(sql);
      if (Number(rows[0].n) >= target) return Number(process.hrtime.bigint() - started) / 1e9;
      if (Number(process.hrtime.bigint() - started) / 1e6 > timeoutMs) throw new Error(`timed out waiting for ${target}: ${sql}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
}
