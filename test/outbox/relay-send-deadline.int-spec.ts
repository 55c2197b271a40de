import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { FakeClock } from '../support/fake-clock';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { insertErpRow, outboxRow } from './outbox-rows';

const TIMEOUT_MS = 800;
const LEASE_MS = 5000;
/** The clock skew an instance may have (start-up refuses more): a quarter of the lease. */
const SKEW_MS = LEASE_MS / 4;

/**
 * The relay's send deadline starts from the claim's own lease end, not from the time
 * the claim returned (which includes the wait for a pooled connection), and leaves
 * room for the skew of another instance's clock and both request timeouts.
 */
describe('relay send deadline (delayed pool, a second relay with a clock ahead)', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let first: TestApp;
  let second: TestApp;
  const env = () => ({
    ERP_URL: erp.url,
    EMAIL_URL: email.sendUrl,
    RELAY_TIMEOUT_MS: String(TIMEOUT_MS),
    RELAY_LEASE_MS: String(LEASE_MS),
    DATABASE_POOL_SIZE: '2',
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    first = await startTestApp({ databaseUrl: db.url, env: env() });
    // Started at real time (the start checks the clock), then set ahead below.
    second = await startTestApp({ databaseUrl: db.url, env: env(), clock: new FakeClock() });
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  it('a claim that waited for the pool sends nothing a relay taking over the expired lease could send again', async () => {
    const key = await insertErpRow(db, 'o-deadline');
    const pool = (first.app.get(DataSource).driver as PostgresDriver).master as Pool;
    const held: PoolClient[] = [await pool.connect(), await pool.connect()];
    erp.failNext(1, { kind: 'hold' });

    // The claim's time (and so its lease end) is taken before it waits 3.5 s for a connection.
    const round = first.app.get(OutboxRelay).runOnce();
    await waitFor('the claim to wait for a pooled connection', async () => pool.waitingCount > 0);
    first.clock.advance(3500);
    for (const client of held) client.release();

    // Either the first relay sent (and its request is held at the ERP) or it deferred the entry.
    let settled = false;
    const done = () => (settled = true);
    round.then(done, done);
    await waitFor('the first round to send or defer', async () => settled || erp.posts(key).length > 0);

    // A second relay whose clock runs SKEW_MS ahead sees the lease over and may take the entry.
    first.clock.advance(300);
    second.clock.offsetMs = first.clock.offsetMs + SKEW_MS;
    await second.app.get(OutboxRelay).runOnce();

    // Never two requests for one key in flight at once: the first relay's must not have been sent.
    expect(erp.posts(key)).toHaveLength(1);
    erp.release(200);
    await round;
    await waitFor('the entry to settle', async () => (await outboxRow(db, key)).status !== 'delivering');
    expect(erp.effects.size).toBeLessThanOrEqual(1);
  });
});
