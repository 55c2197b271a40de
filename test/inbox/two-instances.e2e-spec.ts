import { Injectable, Module } from '@nestjs/common';
import { HandlerOutcome, InboxEvent } from '../../src/inbox/inbox.types';
import { OnWebhookEvent } from '../../src/inbox/on-webhook-event.decorator';
import { MetricsRegistry } from '../../src/observability/metrics.registry';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { createOrder, drain, ENDPOINTS, paymentIntentEvent, postStripe, STORED_PAYLOADS } from './worker-fixtures';
import { UnitOfWork } from '../../src/database/unit-of-work';

/** Leaves one row per committed invocation: a second processing of an event would show as a second row. */
@Injectable()
class EffectHandlers {
  @OnWebhookEvent('stripe', 'test.effect')
  async effect(event: InboxEvent, tx: UnitOfWork): Promise<HandlerOutcome> {
    await tx.query('INSERT INTO test_effects (inbox_id) VALUES ($1)', [event.id]);
    return { kind: 'done' };
  }
}

@Module({ providers: [EffectHandlers] })
class EffectHandlersModule {}

async function doneCount(t: TestApp): Promise<number> {
  const metric = await t.app.get(MetricsRegistry).getSingleMetric('webhook_worker_attempts_total')!.get();
  return metric.values.filter((v) => v.labels.outcome === 'done').reduce((sum, v) => sum + v.value, 0);
}

async function postAll(t: TestApp, events: Record<string, unknown>[], concurrency = 16): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < events.length) await postStripe(t, events[next++]);
    }),
  );
}

/** 200 events: 100 test effects, 80 payments for 80 orders and 20 second events for the same payments. */
async function backlog(t: TestApp, prefix: string): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  for (let i = 0; i < 80; i++) {
    await createOrder(t, `${prefix}${i}`);
    events.push(paymentIntentEvent('payment_intent.succeeded', { orderId: `${prefix}${i}` }));
  }
  for (let i = 0; i < 20; i++) events.push(paymentIntentEvent('payment_intent.succeeded', { orderId: `${prefix}${i}` }));
  for (let i = 0; i < 100; i++) events.push(paymentIntentEvent('test.effect', { orderId: `${prefix}-effect-${i}` }));
  return events.sort(() => Math.random() - 0.5);
}

async function expectEachEffectOnce(db: TestDatabase, prefix: string): Promise<void> {
  const [inbox] = await db.query(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE i.status = 'done' AND i.attempts = 0)::int AS done_first_time
       FROM webhook_inbox i JOIN ${STORED_PAYLOADS} ON stored.id = i.id
      WHERE stored.payload->'data'->'object'->'metadata'->>'order_id' LIKE $1 || '%'`,
    [prefix],
  );
  expect(inbox).toEqual({ total: 200, done_first_time: 200 });
  const [effects] = await db.query(
    `SELECT count(*)::int AS n, count(DISTINCT e.inbox_id)::int AS distinct_events
       FROM test_effects e JOIN ${STORED_PAYLOADS} ON stored.id = e.inbox_id
      WHERE stored.payload->'data'->'object'->'metadata'->>'order_id' LIKE $1 || '%'`,
    [prefix],
  );
  expect(effects).toEqual({ n: 100, distinct_events: 100 });
  const [orders] = await db.query(`SELECT count(*) FILTER (WHERE status = 'paid')::int AS paid FROM orders WHERE id LIKE $1 || '%'`, [
    prefix,
  ]);
  expect(orders).toEqual({ paid: 80 });
  const outbox = await db.query(
    `SELECT destination, count(*)::int AS n FROM outbox WHERE operation_key LIKE '%:acme:' || $1 || '%' GROUP BY destination ORDER BY destination`,
    [prefix],
  );
  expect(outbox).toEqual([
    { destination: 'email', n: 80 },
    { destination: 'erp', n: 80 },
  ]);
}

describe('worker: two app instances drain one backlog, no event processed twice', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query('CREATE TABLE test_effects (inbox_id bigint NOT NULL)');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('two instances draining at once', async () => {
    // One lane each, so every claim is a batch of at most 64 and both instances get work.
    const env = { DATABASE_POOL_SIZE: '3' };
    const a = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env, imports: [EffectHandlersModule] });
    const b = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env, imports: [EffectHandlersModule] });
    try {
      await postAll(a, await backlog(a, 'ra'));
      const started = Date.now();
      const [byA, byB] = await Promise.all([drain(a), drain(b)]);
      const seconds = (Date.now() - started) / 1000;
      process.stdout.write(`two instances (drain): claimed ${byA} + ${byB} in ${seconds.toFixed(2)} s\n`);
      expect(byA + byB).toBe(200);
      expect(byA).toBeGreaterThan(0);
      expect(byB).toBeGreaterThan(0);
      expect((await doneCount(a)) + (await doneCount(b))).toBe(200);
      await expectEachEffectOnce(db, 'ra');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('scheduled workers (ROLES=api,worker) woken by NOTIFY, with a poll far in the future', async () => {
    const env = { ROLES: 'api,worker', WORKER_POLL_MS: '600000' };
    const a = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env, imports: [EffectHandlersModule] });
    const b = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env, imports: [EffectHandlersModule] });
    try {
      const events = await backlog(a, 'sa');
      const started = Date.now();
      await postAll(a, events);
      const deadline = Date.now() + 20_000;
      for (;;) {
        const [row] = await db.query(
          `SELECT count(*)::int AS open FROM ${STORED_PAYLOADS}
            WHERE status IN ('pending','processing') AND payload->'data'->'object'->'metadata'->>'order_id' LIKE 'sa%'`,
        );
        if (row.open === 0) break;
        if (Date.now() > deadline) throw new Error(`${row.open} events still open`);
        await new Promise((r) => setTimeout(r, 20));
      }
      process.stdout.write(`two scheduled instances: 200 posted and processed in ${((Date.now() - started) / 1000).toFixed(2)} s\n`);
      await expectEachEffectOnce(db, 'sa');
      expect((await doneCount(a)) + (await doneCount(b))).toBe(200);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a scheduled worker turns one accepted webhook into a paid order without waiting for the poll', async () => {
    const env = { ROLES: 'api,worker', WORKER_POLL_MS: '600000' };
    const a = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env });
    try {
      await createOrder(a, 'lat1');
      const started = Date.now();
      await postStripe(a, paymentIntentEvent('payment_intent.succeeded', { orderId: 'lat1' }));
      const deadline = Date.now() + 10_000;
      while ((await db.query(`SELECT status FROM orders WHERE id = 'lat1'`))[0].status !== 'paid') {
        if (Date.now() > deadline) throw new Error('order not paid');
        await new Promise((r) => setTimeout(r, 5));
      }
      process.stdout.write(`one webhook: accepted to paid in ${Date.now() - started} ms\n`);
      expect(await db.query(`SELECT count(*)::int AS n FROM outbox WHERE operation_key LIKE '%:acme:lat1'`)).toEqual([{ n: 2 }]);
    } finally {
      await a.close();
    }
  });
});
