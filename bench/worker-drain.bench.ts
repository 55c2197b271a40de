/**
 * Events/s drained by one and by two worker instances (noisy; a figure, not a test).
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
 *   TS_NODE_TRANSPILE_ONLY=1 node -r ts-node/register bench/worker-drain.bench.ts [events]
 * Creates and drops its own databases on that server. Each event is a
 * `payment_intent.succeeded` for its own order: lock, conditional UPDATE, two
 * outbox inserts and the fenced completion, one transaction per event.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { InboxWorker } from '../src/inbox/inbox-worker';
import { withDatabase } from '../test/support/global-setup';
import { startTestApp, TestApp } from '../test/support/test-app';

const EVENTS = Number(process.argv[2] ?? 2000);

async function admin<T>(server: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: server });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function seed(url: string, n: number): Promise<void> {
  await admin(url, async (c) => {
    await c.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email)
       SELECT 'acme', 'o' || g, 'awaiting_payment', 1000, 'eur', 'c' || g || '@example.com' FROM generate_series(1, $1) g`,
      [n],
    );
    await c.query(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
                                  payload_sha256, verified_with, status)
       SELECT 'acme:stripe:platform:test', 'evt_' || g, 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded',
              jsonb_build_object('id', 'evt_' || g, 'type', 'payment_intent.succeeded', 'created', 1790000000,
                'data', jsonb_build_object('object', jsonb_build_object('id', 'pi_' || g, 'amount', 1000,
                  'currency', 'eur', 'metadata', jsonb_build_object('order_id', 'o' || g)))),
              repeat('0', 64), 'bench', 'pending'
         FROM generate_series(1, $1) g`,
      [n],
    );
  });
}

async function drain(t: TestApp): Promise<number> {
  const worker = t.app.get(InboxWorker);
  let total = 0;
  for (let n = await worker.runOnce(); n > 0; n = await worker.runOnce()) total += n;
  return total;
}

async function run(server: string, instances: number): Promise<void> {
  const name = `wi_bench_${randomBytes(4).toString('hex')}`;
  await admin(server, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(server, name);
  const apps: TestApp[] = [];
  try {
    for (let i = 0; i < instances; i++) apps.push(await startTestApp({ databaseUrl: url })); // runs the migrations
    await seed(url, EVENTS);
    const started = process.hrtime.bigint();
    const claimed = await Promise.all(apps.map(drain));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const [check] = await admin(url, async (c) =>
      (
        await c.query(`SELECT count(*) FILTER (WHERE status = 'done')::int AS done,
                              (SELECT count(*)::int FROM outbox) AS outbox FROM webhook_inbox`)
      ).rows,
    );
    process.stdout.write(
      `${instances} instance(s): ${EVENTS} events in ${seconds.toFixed(2)} s = ${Math.round(EVENTS / seconds)} events/s ` +
        `(claimed per instance ${claimed.join('/')}, done ${check.done}, outbox rows ${check.outbox})\n`,
    );
  } finally {
    for (const a of apps) await a.close();
    await admin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

async function main(): Promise<void> {
  const server = process.env.DATABASE_URL;
  if (!server) throw new Error('DATABASE_URL: set it to a PostgreSQL server the bench may create databases on');
  for (const instances of [1, 2, 1, 2]) await run(server, instances);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
