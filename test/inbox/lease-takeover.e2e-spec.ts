import { WorkerFaults } from '../../src/inbox/worker-faults';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { createOrder, ENDPOINTS, inboxRow, orderRow, outboxRows, paymentIntentEvent, postStripe, worker } from './worker-fixtures';
import { waitFor } from '../support/wait-for';

const LEASE_MS = 5_000;

describe('worker: leases [scenarios 19, 19a]', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { WORKER_LEASE_MS: String(LEASE_MS) };
    a = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env });
    b = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await db.drop();
  });

  it('a lease is not taken over before it expires', async () => {
    await createOrder(a, 'o19');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o19' });
    await postStripe(a, event);
    let bClaimed = -1;
    a.app.get(WorkerFaults).beforeComplete = async () => {
      bClaimed = await worker(b).runOnce(); // B's clock is not past A's lease
    };
    await worker(a).runOnce();
    a.app.get(WorkerFaults).beforeComplete = async () => undefined;
    expect(bClaimed).toBe(0);
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 0 });
    expect(await outboxRows(db, 'o19')).toHaveLength(2);
  });

  it('19a: a worker that lost its lease cannot complete: its work rolls back, the new owner applies it once', async () => {
    await createOrder(a, 'o19a');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o19a' });
    await postStripe(a, event);

    let bRun: Promise<number> | undefined;
    a.app.get(WorkerFaults).beforeComplete = async () => {
      // A has updated the order and written its outbox rows, uncommitted. It stalls
      // past its lease; B takes the event over (and then waits for A's order lock).
      b.clock.advance(LEASE_MS + 1_000);
      bRun = worker(b).runOnce();
      await waitFor('B to claim', async () => (await inboxRow(db, event.id as string)).locked_by?.startsWith(`${worker(b).workerId}:`));
    };
    await worker(a).runOnce();
    a.app.get(WorkerFaults).beforeComplete = async () => undefined;
    expect(bRun).toBeDefined();
    expect(await bRun).toBe(1);

    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'done',
      locked_by: null,
      attempts: 1, // the lost attempt is counted
      last_error: 'lease_expired',
    });
    expect((await orderRow(db, 'o19a')).status).toBe('paid');
    const rows = await outboxRows(db, 'o19a');
    expect(rows.map((r) => r.operation_key)).toEqual(['email:receipt:acme:o19a', 'erp:order-paid:acme:o19a']);
    // Nest's Logger is process-wide: the line lands in whichever app was created last.
    expect(a.logs.text() + b.logs.text()).toContain('lease lost before completion');
  });

  it('19a within one instance: a second lane of the same worker takes over, and the first lane is fenced out', async () => {
    await createOrder(a, 'o19lane');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o19lane' });
    await postStripe(a, event);
    let firstLease: string | undefined;
    let laneB: Promise<number> | undefined;
    a.app.get(WorkerFaults).beforeComplete = async () => {
      a.app.get(WorkerFaults).beforeComplete = async () => undefined;
      firstLease = (await inboxRow(db, event.id as string)).locked_by;
      // The same instance's next claim (another lane) sees the lease expired.
      a.clock.advance(LEASE_MS + 1_000);
      laneB = worker(a).runOnce();
      await waitFor('the second lane to claim', async () => {
        const lease = (await inboxRow(db, event.id as string)).locked_by;
        return lease !== null && lease !== firstLease;
      });
    };
    await worker(a).runOnce();
    expect(await laneB).toBe(1);
    expect(firstLease?.startsWith(`${worker(a).workerId}:`)).toBe(true);
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 1, last_error: 'lease_expired' });
    expect((await orderRow(db, 'o19lane')).status).toBe('paid');
    expect(await outboxRows(db, 'o19lane')).toHaveLength(2);
    // The first lane's completion matched nothing and its transaction rolled back.
    const fenced = [...a.logs.lines, ...b.logs.lines].filter((l) => l.includes('lease lost before completion'));
    expect(fenced.some((l) => l.includes(event.id as string))).toBe(true);
  });

  it('an event whose workers keep dying is quarantined when its reclaimed lease reaches the attempt limit', async () => {
    await createOrder(a, 'o-poison');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-poison' });
    await postStripe(a, event);
    // As if nine workers had claimed it and died: attempts 9 of 10, lease expired.
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', attempts = 9, locked_by = 'dead', locked_until = now() - interval '1 s'
        WHERE event_id = $1`,
      [event.id],
    );
    expect(await worker(a).runOnce()).toBe(1);
    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'quarantined',
      status_reason: 'max_attempts',
      attempts: 10,
      last_error: 'lease_expired',
      locked_by: null,
    });
    expect((await orderRow(db, 'o-poison')).status).toBe('awaiting_payment');
  });
});
