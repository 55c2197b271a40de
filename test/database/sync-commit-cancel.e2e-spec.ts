import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { createDataSource } from '../../src/database/data-source';
import { runInTransaction } from '../../src/database/unit-of-work';
import { postgresBinDir, ReplicatedPostgres } from '../faults/lib/replicated-postgres';
import { signStripe, stripeEvent } from '../support/signers';
import { startTestApp, TestApp } from '../support/test-app';

const SECRET = 'whsec_sync_cancel_secret';
const endpoints = [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', value: SECRET }] }];

const haveBinaries = (() => {
  try {
    return Boolean(postgresBinDir());
  } catch {
    return false;
  }
})();
if (!haveBinaries)
  process.stderr.write('synchronous replication test skipped: no PostgreSQL binaries with pg_basebackup (set PG_BINDIR)\n');

/**
 * A commit waiting for the synchronous standby whose wait is cancelled (pg_cancel_backend, as
 * a DBA clearing "stuck" queries during a standby outage): PostgreSQL keeps the local commit and
 * reports success with only a WARNING. Answered 200, the event would be lost at the failover that
 * follows, and the provider, told 200, never sends it again.
 */
(haveBinaries ? describe : describe.skip)('synchronous replication: a cancelled wait for the standby', () => {
  let pg: ReplicatedPostgres;
  let t: TestApp | undefined;
  jest.setTimeout(120_000);

  beforeEach(async () => {
    pg = new ReplicatedPostgres(mkdtempSync(join(tmpdir(), 'sync-cancel-')), true);
    await pg.start();
  });
  afterEach(async () => {
    await t?.close().catch(() => undefined);
    t = undefined;
    await pg.destroy();
  });

  const port = (which: 'primary' | 'standby') =>
    Number((which === 'primary' ? /,127\.0\.0\.1:(\d+)\// : /@127\.0\.0\.1:(\d+),/).exec(pg.url)![1]);
  const on = async <T>(which: 'primary' | 'standby', sql: string): Promise<T[]> => {
    const c = new Client({ connectionString: `postgres://postgres@127.0.0.1:${port(which)}/faults` });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  };

  /** Cancels the service's statements waiting for the standby, once there is one. */
  async function cancelWaitsForStandby(): Promise<void> {
    let cancelled = 0;
    for (const deadline = Date.now() + 10_000; cancelled === 0 && Date.now() < deadline;) {
      [{ n: cancelled }] = await on<{ n: number }>(
        'primary',
        `SELECT count(pg_cancel_backend(pid))::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND application_name = 'webhook-inbox'`,
      );
      if (cancelled === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(cancelled).toBeGreaterThan(0);
  }

  it('a transaction whose COMMIT wait is cancelled fails as outcome unknown (08007), so no caller takes it as done', async () => {
    const dataSource = createDataSource(pg.url, 2);
    await dataSource.initialize();
    try {
      await dataSource.query('CREATE TABLE sync_probe (x int)');
      await pg.pauseReplication();
      const committing = runInTransaction(dataSource, (uow) => uow.query('INSERT INTO sync_probe VALUES (1)'));
      committing.catch(() => undefined);
      await cancelWaitsForStandby();
      await expect(committing).rejects.toMatchObject({ code: '08007', name: 'CommitNotReplicatedError' });
    } finally {
      await dataSource.destroy();
    }
  });

  it('is answered 503, never 200; the retry after the failover is accepted once', async () => {
    t = await startTestApp({ databaseUrl: pg.url, endpoints });
    const post = (signed: ReturnType<typeof signStripe>) =>
      request(t!.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
    expect((await post(signStripe(stripeEvent({ id: 'evt_before' }), SECRET))).status).toBe(200);

    await pg.pauseReplication(); // every COMMIT now waits for the standby
    const signed = signStripe(stripeEvent({ id: 'evt_cancelled_wait' }), SECRET);
    const answer = post(signed).then((r) => r);
    await cancelWaitsForStandby();
    const response = await answer;
    expect(response.status).toBe(503);

    // The primary is lost, the standby promoted: the event is not there, and the provider's retry brings it.
    await pg.killPrimary();
    await pg.promoteStandby();
    expect(await on('standby', `SELECT event_id FROM webhook_inbox WHERE event_id = 'evt_cancelled_wait'`)).toEqual([]);
    let retried = await post(signed);
    for (const deadline = Date.now() + 30_000; retried.status !== 200 && Date.now() < deadline; retried = await post(signed)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(retried.body).toMatchObject({ status: 'accepted' });
    expect(await on('standby', `SELECT count(*)::int AS n FROM webhook_inbox WHERE event_id = 'evt_cancelled_wait'`)).toEqual([{ n: 1 }]);
  });
});
