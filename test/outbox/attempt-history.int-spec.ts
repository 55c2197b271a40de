import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { OutboxService } from '../../src/outbox/outbox.service';
import { FakeDestination, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { insertErpRow, outboxRow } from './outbox-rows';

const RETRY_MS = 1000;

interface AttemptRow {
  attempt: number;
  lease: string;
  outcome: string;
  status_code: number | null;
  duration_ms: number | null;
  outcome_query: string | null;
  retry_after_ms: number | null;
  error: string | null;
}

/** The relay's attempt history, written by the statement that records each outcome. */
describe('outbox attempt history (real PostgreSQL, fake ERP)', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let t: TestApp;
  let relay: OutboxRelay;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    t = await startTestApp({
      databaseUrl: db.url,
      env: {
        ERP_URL: erp.url,
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
    await db?.drop();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM outbox');
    await db.query('DELETE FROM outbox_attempts');
    erp.reset();
  });

  async function attempts(key: string): Promise<AttemptRow[]> {
    return db.query(
      `SELECT a.attempt, a.lease, a.outcome, a.status_code, a.duration_ms, a.outcome_query, a.retry_after_ms, a.error
         FROM outbox_attempts a JOIN outbox o ON o.id = a.outbox_id WHERE o.operation_key = $1 ORDER BY a.attempt, a.at`,
      [key],
    );
  }

  it('records every attempt: status code, duration, the outcome query and Retry-After', async () => {
    erp.failNext(1, { kind: 'status', status: 429, headers: { 'Retry-After': '1' } });
    erp.failNext(1, { kind: 'applyThenHang' });
    const key = await insertErpRow(db, 'h-1');
    await relay.runOnce();
    t.clock.advance(RETRY_MS + 1000);
    await relay.runOnce();
    t.clock.advance(RETRY_MS);
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', attempts: 3 });
    const rows = await attempts(key);
    expect(rows).toMatchObject([
      { attempt: 1, outcome: 'retry', status_code: 429, retry_after_ms: 1000, outcome_query: null, error: 'HTTP 429' },
      { attempt: 2, outcome: 'retry', status_code: null, retry_after_ms: null, outcome_query: null, error: 'timeout' },
      { attempt: 3, outcome: 'delivered', status_code: null, outcome_query: 'applied', error: null },
    ]);
    // The wait for the timeout is part of the second attempt's time (undici's coarse timers may end
    // it a little before RELAY_TIMEOUT_MS); every lease names this relay.
    expect(rows[1].duration_ms).toBeGreaterThanOrEqual(400);
    expect(rows[1].duration_ms).toBeGreaterThan(rows[0].duration_ms!);
    for (const row of rows) {
      expect(row.duration_ms).not.toBeNull();
      expect(row.lease.startsWith(`${relay.relayId}:`)).toBe(true);
    }
  });

  it('records dead and unresolved outcomes with their error', async () => {
    erp.failNext(1, { kind: 'status', status: 400 });
    const dead = await insertErpRow(db, 'h-dead');
    await relay.runOnce();
    expect(await attempts(dead)).toMatchObject([{ attempt: 1, outcome: 'dead', status_code: 400, error: 'HTTP 400' }]);
  });

  it('writes nothing for a relay that lost its lease, nor for a deferred entry', async () => {
    erp.failNext(1, { kind: 'hold' });
    const key = await insertErpRow(db, 'h-fence');
    const round = relay.runOnce();
    await erp.waitForRequests(1);
    await db.query(`UPDATE outbox SET locked_by = 'other-relay', attempts = attempts + 1 WHERE operation_key = $1`, [key]);
    erp.release(200);
    await round;
    expect(await attempts(key)).toEqual([]);
  });

  it('retention deletes an entry together with its history', async () => {
    const key = await insertErpRow(db, 'h-old');
    await relay.runOnce();
    expect(await attempts(key)).toHaveLength(1);
    const [{ id }] = await db.query<{ id: string }>(`SELECT id FROM outbox WHERE operation_key = $1`, [key]);
    await db.query(`UPDATE outbox SET created_at = now() - interval '400 days', delivered_at = now() - interval '400 days'`);
    const outbox = t.app.get(OutboxService);
    expect(await outbox.pruneDelivered(new Date(Date.now() - 86_400_000), 100)).toBe(1);
    expect(await db.query(`SELECT * FROM outbox_attempts WHERE outbox_id = $1`, [id])).toEqual([]);
  });
});
