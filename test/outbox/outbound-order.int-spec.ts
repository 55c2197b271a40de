import request from 'supertest';
import { DataSource } from 'typeorm';
import { runInTransaction } from '../../src/database/unit-of-work';
import { effectsOf } from '../../src/orders/order-effects';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { OutboxWriter } from '../../src/outbox/outbox-writer';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { insertErpRow, outboxRow, paidOrder as order } from './outbox-rows';

const RETRY_MS = 1000;
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/** Outbound order per aggregate (an order) and destination: DESIGN section 11, docs/guarantees.md. */
describe('outbound order: each destination receives an order operations in the order they happened', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  let relay: OutboxRelay;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({
      databaseUrl: db.url,
      env: {
        ERP_URL: erp.url,
        EMAIL_URL: email.sendUrl,
        RELAY_TIMEOUT_MS: '800',
        RELAY_LEASE_MS: '5000',
        RETRY_BASE_MS: String(RETRY_MS),
        RETRY_MAX_MS: String(RETRY_MS),
      },
    });
    relay = t.app.get(OutboxRelay);
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM outbox');
    await db.query('DELETE FROM outbox_destinations');
    erp.reset();
    email.reset();
  });

  /** The business transaction's write, through the real writer (the order's row lock is the caller's; here one writer at a time). */
  async function transition(orderId: string, to: 'paid' | 'refunded'): Promise<void> {
    const effects = effectsOf(order(orderId), to, {
      paymentId: `pi_${orderId}`,
      occurredAt: '2026-12-01T10:00:00.000Z',
      sourceEventId: '1',
    });
    await runInTransaction(t.app.get(DataSource), (tx) => t.app.get(OutboxWriter).write(tx, effects));
  }

  const paid = (o: string) => `erp:order-paid:acme:${o}`;
  const refunded = (o: string) => `erp:order-refunded:acme:${o}`;
  const erpOrder = () => erp.posts().map((r) => r.key);

  async function entryId(key: string): Promise<string> {
    const [row] = await db.query<{ id: string }>('SELECT id::text FROM outbox WHERE operation_key = $1', [key]);
    return row.id;
  }

  it('writes the aggregate and a sequence per order in the business transaction', async () => {
    await transition('o-seq', 'paid');
    await transition('o-seq', 'refunded');
    const rows = await db.query(`SELECT operation_key, aggregate, aggregate_seq FROM outbox ORDER BY aggregate_seq`);
    expect(rows).toEqual([
      { operation_key: paid('o-seq'), aggregate: 'order:o-seq', aggregate_seq: 1 },
      { operation_key: 'email:receipt:acme:o-seq', aggregate: 'order:o-seq', aggregate_seq: 2 },
      { operation_key: refunded('o-seq'), aggregate: 'order:o-seq', aggregate_seq: 3 },
      { operation_key: 'email:refund:acme:o-seq', aggregate: 'order:o-seq', aggregate_seq: 4 },
    ]);
  });

  it('paid is retried while the refund is processed: the ERP receives paid, then refunded, each once', async () => {
    erp.failAlways({ kind: 'status', status: 500 });
    await transition('o-1', 'paid');
    await relay.runOnce();
    expect(await outboxRow(db, paid('o-1'))).toMatchObject({ status: 'pending', last_status_code: 500 });
    // The refund is processed while paid waits for its retries.
    await transition('o-1', 'refunded');
    for (let i = 0; i < 3; i++) {
      await relay.runOnce();
      t.clock.advance(RETRY_MS);
    }
    expect(erp.posts(refunded('o-1'))).toHaveLength(0);
    expect(erp.posts(paid('o-1')).length).toBeGreaterThanOrEqual(2);
    // The email of the refund follows its own predecessor (the receipt, delivered), not the ERP's.
    expect(email.posts('email:refund:acme:o-1')).toHaveLength(1);
    const held = await request(t.url)
      .get(`/admin/outbox/${await entryId(refunded('o-1'))}`)
      .set(op);
    expect(held.body).toMatchObject({ status: 'pending', attempts: 0, heldBy: await entryId(paid('o-1')), aggregate: 'order:o-1' });

    erp.failAlways(undefined);
    t.clock.advance(RETRY_MS);
    await relay.runOnce(); // paid delivered, which releases the refund
    await relay.runOnce();
    const keys = erpOrder();
    expect(keys.slice(-2)).toEqual([paid('o-1'), refunded('o-1')]);
    expect(keys.filter((k) => k === refunded('o-1'))).toHaveLength(1);
    expect([...erp.effects.keys()]).toEqual([paid('o-1'), refunded('o-1')]);
    expect(await outboxRow(db, refunded('o-1'))).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('a dead paid holds the refund (held in admin and metrics) until an operator retries it', async () => {
    erp.failNext(1, { kind: 'status', status: 422 });
    await transition('o-2', 'paid');
    await relay.runOnce();
    expect(await outboxRow(db, paid('o-2'))).toMatchObject({ status: 'dead' });
    await transition('o-2', 'refunded');
    for (let i = 0; i < 3; i++) {
      t.clock.advance(60_000);
      await relay.runOnce();
    }
    expect(erp.posts(refunded('o-2'))).toHaveLength(0);
    expect(await outboxRow(db, refunded('o-2'))).toMatchObject({ status: 'pending', attempts: 0 });
    const list = await request(t.url).get('/admin/outbox?destination=erp').set(op);
    const refund = list.body.items.find((i: { operationKey: string }) => i.operationKey === refunded('o-2'));
    expect(refund.heldBy).toBe(await entryId(paid('o-2')));
    const metrics = await request(t.url).get('/metrics');
    expect(metrics.text).toMatch(/outbox_backlog\{status="held"\} 1/);

    const retry = await request(t.url)
      .post(`/admin/outbox/${await entryId(paid('o-2'))}/retry`)
      .set(op)
      .send({ reason: 'ERP mapping fixed' });
    expect(retry.status).toBe(200);
    await relay.runOnce();
    await relay.runOnce();
    expect(erpOrder()).toEqual([paid('o-2'), paid('o-2'), refunded('o-2')]);
    expect([...erp.effects.keys()]).toEqual([paid('o-2'), refunded('o-2')]);
    expect(await outboxRow(db, refunded('o-2'))).toMatchObject({ status: 'delivered' });
  });

  it('an operator resolving the dead paid as settled releases the refund at once', async () => {
    erp.failNext(1, { kind: 'status', status: 422 });
    await transition('o-3', 'paid');
    await relay.runOnce();
    await transition('o-3', 'refunded');
    await relay.runOnce();
    expect(erp.posts(refunded('o-3'))).toHaveLength(0);
    const resolve = await request(t.url)
      .post(`/admin/outbox/${await entryId(paid('o-3'))}/resolve`)
      .set(op)
      .send({ outcome: 'delivered', reason: 'entered by hand in the ERP' });
    expect(resolve.body).toMatchObject({ before: 'dead', after: 'delivered' });
    await relay.runOnce();
    expect(erp.posts(refunded('o-3'))).toHaveLength(1);
    expect(await outboxRow(db, refunded('o-3'))).toMatchObject({ status: 'delivered' });
  });

  it('two orders, one held: the other flows (no head-of-line blocking across orders)', async () => {
    erp.failNext(1, { kind: 'status', status: 422 });
    await transition('o-held', 'paid');
    await relay.runOnce();
    await transition('o-held', 'refunded');
    await transition('o-free', 'paid');
    await transition('o-free', 'refunded');
    await relay.runOnce();
    await relay.runOnce();
    expect(await outboxRow(db, refunded('o-held'))).toMatchObject({ status: 'pending' });
    expect(await outboxRow(db, paid('o-free'))).toMatchObject({ status: 'delivered' });
    expect(await outboxRow(db, refunded('o-free'))).toMatchObject({ status: 'delivered' });
    const free = erp
      .posts()
      .filter((r) => r.key!.endsWith(':o-free'))
      .map((r) => r.key);
    expect(free).toEqual([paid('o-free'), refunded('o-free')]);
  });

  it('entries written before ordering existed (no aggregate) are never held', async () => {
    erp.failNext(1, { kind: 'status', status: 422 });
    const before = await insertErpRow(db, 'o-legacy');
    await relay.runOnce();
    expect(await outboxRow(db, before)).toMatchObject({ status: 'dead' });
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
       SELECT $2, destination, 'order.refunded', tenant_id, jsonb_set(payload, '{type}', '"order.refunded"'), now() - interval '1 second'
         FROM outbox WHERE operation_key = $1`,
      [before, refunded('o-legacy')],
    );
    await relay.runOnce();
    expect(await outboxRow(db, refunded('o-legacy'))).toMatchObject({ status: 'delivered' });
  });
});
