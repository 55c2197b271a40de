import { UnitOfWork } from '../../src/database/unit-of-work';
import { WorkerFaults } from '../../src/inbox/worker-faults';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';
import { createOrder, ENDPOINTS, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

const EVENTS = 600;

/**
 * Batches that take most of a lease: a batch claimed ahead of the lanes must not
 * wait in memory until its lease runs out and the worker's own next claim takes
 * it over (a lost attempt, and the whole batch run again one event at a time).
 */
describe('worker: slow batches against a short lease', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { WORKER_LEASE_MS: '3000' } }, (started) => ({ db, t } = started));

  it('claims only for free lanes, so every batch completes inside its lease', async () => {
    const ids = Array.from({ length: EVENTS }, (_, i) => `slow${i}`);
    for (let i = 0; i < EVENTS; i += 50) {
      await Promise.all(ids.slice(i, i + 50).map((id) => createOrder(t, id)));
      await Promise.all(ids.slice(i, i + 50).map((id) => postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: id }))));
    }
    // Each transaction's first attempt takes 2 s of a 3 s lease.
    const slowed = new WeakSet<UnitOfWork>();
    t.app.get(WorkerFaults).beforeComplete = async (event, tx) => {
      if (event.attempts > 0 || slowed.has(tx)) return;
      slowed.add(tx);
      await new Promise((r) => setTimeout(r, 2_000));
    };
    // Polls, as the scheduler would: a claim also takes over expired leases.
    const poll = setInterval(() => worker(t).wake(), 200);
    try {
      await worker(t).drain();
    } finally {
      clearInterval(poll);
      t.app.get(WorkerFaults).beforeComplete = async () => undefined;
    }
    const rows = await db.query<{ status: string; attempts: number; n: number }>(
      'SELECT status, attempts, count(*)::int AS n FROM webhook_inbox GROUP BY 1, 2 ORDER BY 1, 2',
    );
    expect(rows).toEqual([{ status: 'done', attempts: 0, n: EVENTS }]);
  }, 60_000);
});
