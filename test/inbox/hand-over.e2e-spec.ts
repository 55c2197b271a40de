import { InboxRepository } from '../../src/inbox/inbox.repository';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { createOrder, ENDPOINTS, inboxRow, orderRow, outboxRows, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

const LEASE_MS = 2_000;

/**
 * An instance with the worker role commits the events it accepts already claimed by its
 * own worker (no claim statement, no NOTIFY), and the lease keeps the guarantee when
 * that instance dies before it gets to them.
 */
describe('worker: events handed over by the instance that accepts them', () => {
  let db: TestDatabase;
  let scheduled: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { WORKER_LEASE_MS: String(LEASE_MS), WORKER_POLL_MS: '600000' };
    scheduled = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { ...env, ROLES: 'api,worker' } });
    other = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env });
    // The worker takes events over only once a batch has shown it is quick against the lease.
    await createOrder(scheduled, 'h0');
    const first = paymentIntentEvent('payment_intent.succeeded', { orderId: 'h0' });
    await postStripe(scheduled, first);
    await waitFor('the first event to be done', async () => (await inboxRow(db, first.id as string)).status === 'done');
  });
  afterAll(async () => {
    await scheduled.close();
    await other.close();
    await db.drop();
  });

  it('an accepted event is committed claimed by the scheduled worker and processed without a claim', async () => {
    await createOrder(scheduled, 'h1');
    await worker(scheduled).drain();
    const claims = jest.spyOn(scheduled.app.get(InboxRepository), 'claim');
    try {
      const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'h1' });
      await postStripe(scheduled, event);
      await waitFor('the order to be paid', async () => (await orderRow(db, 'h1')).status === 'paid');
      await waitFor('the event to be done', async () => (await inboxRow(db, event.id as string)).status === 'done');
      expect(claims).not.toHaveBeenCalled();
      const [attempt] = await db.query(
        `SELECT a.lease, a.outcome FROM webhook_inbox_attempts a JOIN webhook_inbox i ON i.id = a.inbox_id WHERE i.event_id = $1`,
        [event.id],
      );
      expect(attempt.outcome).toBe('done');
      expect(attempt.lease.startsWith(`${worker(scheduled).workerId}:`)).toBe(true);
      expect(await outboxRows(db, 'h1')).toHaveLength(2);
    } finally {
      claims.mockRestore();
    }
  });

  it('if the accepting instance dies before processing, any worker takes the event over once its lease expires, and applies it once', async () => {
    await createOrder(scheduled, 'h2');
    // As if the process died right after the insert's commit: the handed-over events are lost with it.
    const handOver = jest.spyOn(worker(scheduled), 'handOver').mockImplementation(() => undefined);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'h2' });
    try {
      await postStripe(scheduled, event);
    } finally {
      handOver.mockRestore();
    }
    const held = await inboxRow(db, event.id as string);
    expect(held).toMatchObject({ status: 'processing', attempts: 0 });
    expect(held.locked_by.startsWith(`${worker(scheduled).workerId}:`)).toBe(true);

    expect(await worker(other).runOnce()).toBe(0); // the lease holds until it expires
    other.clock.advance(LEASE_MS + 1_000);
    expect(await worker(other).runOnce()).toBe(1);

    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 1, locked_by: null });
    expect(await orderRow(db, 'h2')).toMatchObject({ status: 'paid' });
    expect(await outboxRows(db, 'h2')).toHaveLength(2);
    const history = await db.query(
      `SELECT a.outcome, a.lease FROM webhook_inbox_attempts a JOIN webhook_inbox i ON i.id = a.inbox_id WHERE i.event_id = $1 ORDER BY a.attempt`,
      [event.id],
    );
    expect(history.map((h: { outcome: string }) => h.outcome)).toEqual(['lease_expired', 'done']);
    expect(history[0].lease).toBe(held.locked_by);
  });

  it('an instance without the worker role inserts pending rows for any worker to claim', async () => {
    await createOrder(other, 'h3');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'h3' });
    await postStripe(other, event);
    const row = await inboxRow(db, event.id as string);
    // The scheduled instance's worker, woken by NOTIFY, may already have claimed it: never under a lease of `other`.
    expect(row.locked_by === null || row.locked_by.startsWith(`${worker(scheduled).workerId}:`)).toBe(true);
    await waitFor('the event to be done', async () => (await inboxRow(db, event.id as string)).status === 'done');
  });
});
