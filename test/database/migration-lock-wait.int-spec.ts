import { Client } from 'pg';
import { createDataSource, runMigrations } from '../../src/database/data-source';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/**
 * Every migration's ALTER of webhook_inbox waits 5 s at most for its lock (runWithLockTimeout):
 * queued behind a long reader (a report, pg_dump), an ALTER without that bound held up every
 * insert and claim behind it until the pool's 30 s timeout failed the start, again at each restart.
 * Found by an adversarial review for the migrations older than 97e77de; this test failed before.
 */
describe('an older migration on a live inbox', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('does not stall readers and writers of the inbox behind a long transaction', async () => {
    // The database as the version before InboxSourceFacts left it (for this one column).
    await db.query(`ALTER TABLE webhook_inbox DROP COLUMN source_facts`);
    await db.query(`DELETE FROM schema_migrations WHERE name = 'InboxSourceFacts1764720000000'`);

    const longReader = new Client({ connectionString: db.url });
    const ingest = new Client({ connectionString: db.url });
    await longReader.connect();
    await ingest.connect();
    const dataSource = await createDataSource(db.url, 2).initialize();
    try {
      await longReader.query('BEGIN');
      await longReader.query('SELECT count(*) FROM webhook_inbox'); // holds ACCESS SHARE, like pg_dump

      const migration = runMigrations(dataSource).then(
        () => 'applied',
        (e: Error) => `failed: ${e.message}`,
      );
      await new Promise((r) => setTimeout(r, 500));

      // A plain read of the inbox (the claim's, the admin's) while the upgrade runs: it must not wait
      // longer than a migration's 5 s lock wait.
      await ingest.query(`SET statement_timeout = '8s'`);
      const started = Date.now();
      let readError: string | undefined;
      await ingest.query('SELECT count(*) FROM webhook_inbox').catch((e: Error) => (readError = e.message));
      const waited = Date.now() - started;

      await longReader.query('ROLLBACK');
      const outcome = await migration;
      expect({ readError, waitedUnder6s: waited < 6_000 }).toEqual({ readError: undefined, waitedUnder6s: true });
      expect(outcome).toBeDefined();
    } finally {
      await longReader.end().catch(() => undefined);
      await ingest.end().catch(() => undefined);
      await dataSource.destroy();
    }
  }, 60_000);
});
