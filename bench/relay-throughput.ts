/**
 * Deliveries per second from the outbox to local fake destinations.
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres TS_NODE_TRANSPILE_ONLY=1 \
 *     node -r ts-node/register bench/relay-throughput.ts [entries] [relays]
 * Creates a scratch database, fills the outbox (half ERP, half email), drains it
 * with `relays` relay instances (one app each) calling runOnce() in a loop.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createApp } from '../src/app.factory';
import { loadConfig } from '../src/config/load-config';
import { createDataSource, runMigrations } from '../src/database/data-source';
import { OutboxRelay } from '../src/outbox/outbox-relay';
import { startFakeEmail, startFakeErp } from '../test/support/fake-destinations';
import { withDatabase } from '../test/support/global-setup';

async function main(): Promise<void> {
  const server = process.env.DATABASE_URL;
  if (!server) throw new Error('set DATABASE_URL to a PostgreSQL server');
  const total = Number(process.argv[2] ?? 10_000);
  const relays = Number(process.argv[3] ?? 1);
  const name = `wi_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = withDatabase(server, name);
  const ds = createDataSource(url, 2);
  await ds.initialize();
  await runMigrations(ds);

  const erp = await startFakeErp();
  const email = await startFakeEmail();
  const dir = mkdtempSync(join(tmpdir(), 'wi-bench-'));
  writeFileSync(join(dir, 'endpoints.json'), '{"endpoints":[]}');
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: url,
    WEBHOOK_ENDPOINTS_FILE: join(dir, 'endpoints.json'),
    ROLES: 'api',
    ERP_URL: erp.url,
    EMAIL_URL: email.sendUrl,
    LOG_LEVEL: 'silent',
  });
  const apps = await Promise.all(Array.from({ length: relays }, () => createApp(config, { logger: false })));
  for (const app of apps) await app.init();

  await ds.query(
    `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload)
     SELECT CASE WHEN i % 2 = 0 THEN 'erp:order-paid:acme:' ELSE 'email:receipt:acme:' END || i,
            CASE WHEN i % 2 = 0 THEN 'erp' ELSE 'email' END,
            CASE WHEN i % 2 = 0 THEN 'order.paid' ELSE 'email.receipt' END,
            'acme',
            CASE WHEN i % 2 = 0
              THEN jsonb_build_object('operationKey', 'erp:order-paid:acme:' || i, 'type', 'order.paid', 'tenantId', 'acme',
                     'orderId', 'o-' || i, 'amountMinor', 4200, 'currency', 'eur', 'paymentId', 'pi_' || i,
                     'occurredAt', '2026-01-01T00:00:00Z')
              ELSE jsonb_build_object('to', 'b' || i || '@example.com', 'template', 'receipt', 'data', jsonb_build_object('orderId', 'o-' || i))
            END
       FROM generate_series(1, $1) AS i`,
    [total],
  );

  const started = process.hrtime.bigint();
  await Promise.all(
    apps.map(async (app) => {
      const relay = app.get(OutboxRelay);
      while ((await relay.runOnce()) > 0);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const [{ delivered }] = await ds.query(`SELECT count(*)::int AS delivered FROM outbox WHERE status = 'delivered'`);
  const duplicates = erp.posts().length + email.posts().length - total;
  process.stdout.write(
    `${delivered}/${total} delivered by ${relays} relay(s) in ${seconds.toFixed(2)} s: ` +
      `${Math.round(delivered / seconds)} deliveries/s; extra requests: ${duplicates}\n`,
  );

  for (const app of apps) await app.close();
  await ds.destroy();
  await erp.close();
  await email.close();
  await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
