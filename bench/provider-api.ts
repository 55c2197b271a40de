/**
 * npm run bench:provider-api [-- --events=1000 --rate=300 --seconds=2]
 * Issue 19's figures, in process against local fakes of the Stripe API (never the
 * internet), on DATABASE_URL or an embedded PostgreSQL, each beside a baseline
 * measured in the same run:
 * - reconciliation: time per 1,000 missing events brought in by one run, and its
 *   API calls, against receiving the same events as signed webhooks (16 at a time);
 * - confirm reads: the drain rate of a backlog fed at --rate events/s with confirm
 *   on against a fake limited to 25 reads/s (and the read budget at 25/s), against
 *   the same backlog with confirm off; quarantines and 429s counted.
 * Saved under bench/results/provider-api-<time>.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createApp } from '../src/app.factory';
import { loadConfig } from '../src/config/load-config';
import { InboxWorker } from '../src/inbox/inbox-worker';
import { OrdersService } from '../src/orders/orders.service';
import { ReconciliationScheduler } from '../src/reconciliation/reconciliation.scheduler';
import { signStripe } from '../test/support/signers';
import { FakeStripeApi, StripeEventObject } from '../test/support/fake-stripe-api';
import { freshDatabase, startServer } from './lib/database';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const EVENTS = arg('events', 1000);
const RATE = arg('rate', 300);
const SECONDS = arg('seconds', 2);
const KEY = 'sk_test_bench_0123456789';
const SECRET = 'whsec_bench_provider_api';
const log = (line: string) => process.stderr.write(`${line}\n`);

async function app(databaseUrl: string, stripe: FakeStripeApi, confirm: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'wi-bench-api-'));
  const file = join(dir, 'endpoints.json');
  writeFileSync(
    file,
    JSON.stringify({
      endpoints: [
        {
          id: 'stripe-acme',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: 'bench', value: SECRET }],
          toleranceSeconds: 600,
          eventTypes: ['payment_intent.succeeded', 'charge.refunded'],
          api: { env: 'STRIPE_API_KEY', baseUrl: stripe.url, confirm, reconcile: { enabled: true } },
        },
      ],
    }),
  );
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    WEBHOOK_ENDPOINTS_FILE: file,
    LOG_LEVEL: 'error',
    ADMIN_TOKENS: 'ops:operator:bench-operator-token-0123456789',
    ROLES: 'api',
    STRIPE_API_KEY: KEY,
    PROVIDER_API_READS_PER_SECOND: '25',
  });
  const nest = await createApp(config, { logger: false });
  await nest.listen(0, '127.0.0.1');
  const { port } = nest.getHttpServer().address() as { port: number };
  return { nest, url: `http://127.0.0.1:${port}` };
}

function event(i: number, prefix: string): StripeEventObject {
  return {
    id: `evt_${prefix}_${i}`,
    object: 'event',
    api_version: '2026-10-28',
    created: Math.floor(Date.now() / 1000) - 60 - (i % 3000),
    livemode: false,
    type: 'payment_intent.succeeded',
    pending_webhooks: 1,
    data: {
      object: {
        id: `pi_${prefix}_${i}`,
        object: 'payment_intent',
        amount: 1000,
        currency: 'eur',
        status: 'succeeded',
        metadata: { order_id: `${prefix}_${i}` },
      },
    },
  };
}

async function seedOrders(nest: Awaited<ReturnType<typeof app>>['nest'], prefix: string, n: number, stripe: FakeStripeApi): Promise<void> {
  const orders = nest.get(OrdersService);
  for (let i = 0; i < n; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, j) => {
        const id = `${prefix}_${i + j}`;
        stripe.addPayment(`pi_${id}`, { amount: 1000, currency: 'eur', orderId: id });
        return orders.create({ tenantId: 'acme', id, totalMinor: 1000, currency: 'eur', customerEmail: `${id}@example.com` });
      }),
    );
  }
}

async function post(url: string, events: object[], concurrency = 16): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < events.length) {
        const signed = signStripe(events[next++], SECRET);
        const res = await request(url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
        if (res.status !== 200) throw new Error(`webhook ${res.status}`);
      }
    }),
  );
}

async function main(): Promise<void> {
  const server = await startServer();
  const results: Record<string, unknown>[] = [];
  try {
    // ---- reconciliation vs webhooks, same events, fresh databases ----
    for (let round = 1; round <= 2; round++) {
      const stripe = await new FakeStripeApi(KEY).start();
      const db = await freshDatabase(server);
      const a = await app(db.url, stripe, false);
      const events = Array.from({ length: EVENTS }, (_, i) => stripe.addEvent(event(i, `r${round}`)));
      let t0 = Date.now();
      await a.nest.get(ReconciliationScheduler).runOnce();
      const reconcileMs = Date.now() - t0;
      const calls = stripe.callsTo('/v1/events').length;
      await a.nest.close();
      await db.drop();

      const db2 = await freshDatabase(server);
      const b = await app(db2.url, stripe, false);
      t0 = Date.now();
      await post(b.url, events);
      const webhookMs = Date.now() - t0;
      await b.nest.close();
      await db2.drop();
      await stripe.stop();
      const row = {
        stage: 'reconcile missing events',
        round,
        events: EVENTS,
        apiCallsPerRun: calls,
        msPer1000: Math.round((reconcileMs * 1000) / EVENTS),
        baselineWebhooksMsPer1000: Math.round((webhookMs * 1000) / EVENTS),
        ratioToWebhooks: Number((webhookMs / reconcileMs).toFixed(2)),
      };
      log(JSON.stringify(row));
      results.push(row);
    }

    // ---- drain with confirm on at the fake's 25 reads/s, vs confirm off ----
    for (const confirm of [false, true]) {
      const stripe = await new FakeStripeApi(KEY).start();
      stripe.readsPerSecond = 25;
      const db = await freshDatabase(server);
      const a = await app(db.url, stripe, confirm);
      const n = RATE * SECONDS;
      const prefix = confirm ? 'con' : 'off';
      await seedOrders(a.nest, prefix, n, stripe);
      const events = Array.from({ length: n }, (_, i) => event(i, prefix));
      // Fed at RATE per second while the worker drains.
      const worker = a.nest.get(InboxWorker);
      const t0 = Date.now();
      const feeding = (async () => {
        for (let s = 0; s < SECONDS; s++) {
          const started = Date.now();
          await post(a.url, events.slice(s * RATE, (s + 1) * RATE), 32);
          const left = 1000 - (Date.now() - started);
          if (left > 0) await new Promise((r) => setTimeout(r, left));
        }
      })();
      const dataSource = a.nest.get(DataSource);
      const count = async (sql: string) => Number((await dataSource.query(sql))[0].n);
      let settled = 0;
      while (settled < n) {
        await worker.drain();
        settled = await count(`SELECT count(*)::int AS n FROM webhook_inbox WHERE status IN ('done', 'quarantined', 'ignored')`);
        if (settled < n) await new Promise((r) => setTimeout(r, 100));
        if (Date.now() - t0 > 600_000) throw new Error('drain did not finish in 10 minutes');
      }
      await feeding;
      const ms = Date.now() - t0;
      const quarantined = await count(`SELECT count(*)::int AS n FROM webhook_inbox WHERE status = 'quarantined'`);
      const row = {
        stage: confirm ? 'drain, confirm on, fake at 25 reads/s' : 'drain, confirm off (baseline)',
        events: n,
        fedPerSecond: RATE,
        drainPerSecond: Math.round((n * 1000) / ms),
        reads: stripe.callsTo('/v1/payment_intents/').length,
        throttled429: stripe.calls.filter((c) => c.status === 429).length,
        quarantined,
      };
      log(JSON.stringify(row));
      results.push(row);
      await a.nest.close();
      await db.drop();
      await stripe.stop();
    }
  } finally {
    await server.stop();
  }
  const out = {
    at: new Date().toISOString(),
    machine: { cpus: cpus().length, loadavg: loadavg(), note: 'shared with other engineers: read the ratios, not the absolute figures' },
    results,
  };
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  const file = join(__dirname, 'results', `provider-api-${out.at.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  log(`saved ${file}`);
}

main().catch((error) => {
  log(String(error?.stack ?? error));
  process.exit(1);
});
