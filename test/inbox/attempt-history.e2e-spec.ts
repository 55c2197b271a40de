import { WorkerFaults } from '../../src/inbox/worker-faults';
import { InboxRetentionService } from '../../src/inbox/inbox-retention.service';
import { TransientError } from '../../src/common/errors';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { createOrder, drain, ENDPOINTS, inboxRow, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

interface AttemptRow {
  attempt: number;
  lease: string | null;
  outcome: string;
  reason: string | null;
  error: string | null;
}

/** The worker's attempt history and the order's transitions, written by the statements that record outcomes. */
describe('worker: attempt history', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: ENDPOINTS,
      env: { WORKER_MAX_ATTEMPTS: '3', RETRY_BASE_MS: '1000', RETRY_MAX_MS: '1000' },
    });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });
  afterEach(() => {
    t.app.get(WorkerFaults).beforeComplete = async () => undefined;
  });

  async function attempts(inboxId: string): Promise<AttemptRow[]> {
    return db.query(`SELECT attempt, lease, outcome, reason, error FROM webhook_inbox_attempts WHERE inbox_id = $1 ORDER BY attempt, at`, [
      inboxId,
    ]);
  }

  it('a failed attempt then a success: two rows, each with its lease and outcome; the order step beside them', async () => {
    await createOrder(t, 'ah1', 1000, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'ah1' });
    let failures = 1;
    t.app.get(WorkerFaults).beforeComplete = async () => {
      if (failures-- > 0) throw new TransientError('erp_mapping_flaky');
    };
    await postStripe(t, event);
    await worker(t).runOnce();
    t.clock.advance(1000);
    await drain(t);
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'done', attempts: 1 });
    const history = await attempts(row.id);
    expect(history).toMatchObject([
      { attempt: 1, outcome: 'retry', reason: null, error: 'TransientError: erp_mapping_flaky' },
      { attempt: 2, outcome: 'done', reason: null, error: null },
    ]);
    for (const h of history) expect(h.lease?.startsWith(`${worker(t).workerId}:`)).toBe(true);
    // The rolled-back first attempt left no transition; the second left exactly one.
    expect(
      await db.query(`SELECT tenant_id, order_id, from_status, to_status FROM order_transitions WHERE inbox_id = $1`, [row.id]),
    ).toEqual([{ tenant_id: 'acme', order_id: 'ah1', from_status: 'awaiting_payment', to_status: 'paid' }]);
  });

  it('attempts exhausted: the last row says quarantined with max_attempts', async () => {
    await createOrder(t, 'ah2', 1000, 'eur');
    t.app.get(WorkerFaults).beforeComplete = async () => {
      throw new TransientError('always');
    };
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'ah2' });
    await postStripe(t, event);
    for (let i = 0; i < 3; i++) {
      await worker(t).runOnce();
      t.clock.advance(1000);
    }
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'quarantined', status_reason: 'max_attempts' });
    expect((await attempts(row.id)).map((a) => [a.attempt, a.outcome, a.reason])).toEqual([
      [1, 'retry', null],
      [2, 'retry', null],
      [3, 'quarantined', 'max_attempts'],
    ]);
  });

  it('an ignored event and a lost lease are recorded too: the claim that takes over writes the lost attempt', async () => {
    const ignored = { ...paymentIntentEvent('payment_intent.created', { orderId: 'ah3' }) };
    await postStripe(t, ignored);
    await drain(t);
    const ignoredRow = await inboxRow(db, ignored.id as string);
    expect(await attempts(ignoredRow.id)).toMatchObject([{ attempt: 1, outcome: 'ignored', reason: 'no_handler' }]);

    await createOrder(t, 'ah4', 1000, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'ah4' });
    await postStripe(t, event);
    const row = await inboxRow(db, event.id as string);
    // As if a worker had claimed it and died.
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', locked_by = 'dead-worker:7', locked_until = now() - interval '1 minute' WHERE id = $1`,
      [row.id],
    );
    await drain(t);
    expect(await attempts(row.id)).toMatchObject([
      { attempt: 1, outcome: 'lease_expired', lease: 'dead-worker:7' },
      { attempt: 2, outcome: 'done' },
    ]);
  });

  it('retention deletes an identity together with its history', async () => {
    await createOrder(t, 'ah5', 1000, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'ah5' });
    await postStripe(t, event);
    await drain(t);
    const row = await inboxRow(db, event.id as string);
    expect(await attempts(row.id)).toHaveLength(1);
    await db.query(`UPDATE webhook_inbox SET received_at = now() - interval '400 days' WHERE id = $1`, [row.id]);
    expect(await t.app.get(InboxRetentionService).deleteIdentities(new Date(Date.now() - 86_400_000), 100)).toBe(1);
    expect(await attempts(row.id)).toEqual([]);
  });
});
