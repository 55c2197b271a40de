import { WorkerFaults } from '../../src/inbox/worker-faults';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { createOrder, ENDPOINTS, inboxRow, orderRow, outboxRows, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

/** Short, so that a worker stalled past it is cut off within the test. */
const LEASE_MS = 1_000;

const noFault = async () => undefined;

describe('worker: claims, leases and lost attempts [scenarios 19, 19a]', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { WORKER_LEASE_MS: String(LEASE_MS) };
    a = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env });
    b = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env });
  });
  afterEach(() => {
    a.app.get(WorkerFaults).beforeComplete = noFault;
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await db.drop();
  });

  it('a claimed event is not taken while its worker holds it, and a live claim is not recovered', async () => {
    await createOrder(a, 'o19');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o19' });
    await postStripe(a, event);
    let bClaimed = -1;
    a.app.get(WorkerFaults).beforeComplete = async () => {
      bClaimed = await worker(b).runOnce();
      await worker(b).recover();
    };
    await worker(a).runOnce();
    expect(bClaimed).toBe(0);
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 0, last_error: null });
    expect(await outboxRows(db, 'o19')).toHaveLength(2);
    expect(await db.query('SELECT * FROM inbox_claims')).toEqual([]);
  });

  it('19a: a worker stalled past its lease is cut off by the database: another completes the event once, the stalled one changes nothing', async () => {
    await createOrder(a, 'o19a');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o19a' });
    await postStripe(a, event);

    let bClaimed = 0;
    a.app.get(WorkerFaults).beforeComplete = async () => {
      // A has updated the order and written its outbox rows, uncommitted, and stalls. Once its
      // transaction has been idle for the lease, PostgreSQL ends it and B can take the event.
      const deadline = Date.now() + 10 * LEASE_MS;
      while (bClaimed === 0 && Date.now() < deadline) {
        bClaimed = await worker(b).runOnce();
        if (bClaimed === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await worker(a).runOnce();
    expect(bClaimed).toBe(1);

    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 0 });
    expect((await orderRow(db, 'o19a')).status).toBe('paid');
    const rows = await outboxRows(db, 'o19a');
    expect(rows.map((r) => r.operation_key)).toEqual(['email:receipt:acme:o19a', 'erp:order-paid:acme:o19a']);
    expect(a.logs.text() + b.logs.text()).toContain('attempt lost with its transaction');
    // A's journal row outlived its transaction; recovery removes it and counts nothing on a done event.
    await worker(b).recover();
    expect(await db.query('SELECT * FROM inbox_claims')).toEqual([]);
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 0 });
  });

  it('an event whose workers keep dying is quarantined when the lost attempts reach the limit', async () => {
    await createOrder(a, 'o-poison');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-poison' });
    await postStripe(a, event);
    // As if nine workers had died on it, and a tenth claim was left in the journal by a dead worker.
    const { id } = await inboxRow(db, event.id as string);
    await db.query(`UPDATE webhook_inbox SET attempts = 9, last_error = 'worker_lost' WHERE id = $1`, [id]);
    await db.query(`INSERT INTO inbox_claims (lock_key, worker, event_ids) VALUES (42, 'dead', ARRAY[$1::bigint])`, [id]);
    await worker(a).recover();
    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'quarantined',
      status_reason: 'max_attempts',
      attempts: 10,
      last_error: 'worker_lost',
    });
    expect(await worker(a).runOnce()).toBe(0);
    expect((await orderRow(db, 'o-poison')).status).toBe('awaiting_payment');
    expect(a.logs.text() + b.logs.text()).toContain('event quarantined: its attempts kept ending without an outcome');
  });

  it('a row an older version left processing under an expired lease is counted and processed', async () => {
    await createOrder(a, 'o-legacy');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-legacy' });
    await postStripe(a, event);
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', locked_by = 'old', locked_until = now() - interval '1 s' WHERE event_id = $1`,
      [event.id],
    );
    await worker(a).recover();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'lease_expired', locked_by: null });
    expect(await worker(a).runOnce()).toBe(1);
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 1 });
  });

  it('an event whose last attempt died with its worker is processed apart from the rest of its batch', async () => {
    const events = ['o-s1', 'o-s2', 'o-s3'].map((orderId) => paymentIntentEvent('payment_intent.succeeded', { orderId }));
    for (const [i, event] of events.entries()) {
      await createOrder(a, `o-s${i + 1}`);
      await postStripe(a, event);
    }
    await db.query(`UPDATE webhook_inbox SET attempts = 1, last_error = 'worker_lost' WHERE event_id = $1`, [events[1].id]);
    const transactionOf = new Map<string, string>();
    a.app.get(WorkerFaults).beforeComplete = async (event, tx) => {
      transactionOf.set(event.eventId, (await tx.query('SELECT txid_current()::text AS id'))[0].id);
    };
    expect(await worker(a).runOnce()).toBe(3);
    const [first, suspect, third] = events.map((e) => transactionOf.get(e.id as string));
    expect(first).toBe(third);
    expect(suspect).toBeDefined();
    expect(suspect).not.toBe(first);
    for (const event of events) expect((await inboxRow(db, event.id as string)).status).toBe('done');
  });
});
