import type { Pool, PoolClient } from 'pg';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { createDataSource } from '../../src/database/data-source';
import { isDatabaseUnavailable } from '../../src/common/database-errors';
import { TestDatabase, useTestDatabase } from '../support/test-database';

// Found by the fault suite (test/faults): when PostgreSQL shut down, a service died
// with "Unhandled 'error' event" from a pool client that was checked out but had no
// error listener at that moment (pg emits a server-side FATAL on the client itself).
// A database restart must cost 503s and retries, never the process.
describe('pool clients: a server-side disconnect never crashes the process', () => {
  let db: TestDatabase;
  useTestDatabase((created) => (db = created));

  it('a checked-out client whose backend is terminated emits no unhandled error', async () => {
    const ds = createDataSource(db.url, 4);
    await ds.initialize();
    try {
      const pool = (ds.driver as PostgresDriver).master as Pool;
      const client: PoolClient = await pool.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const listeners = client.listenerCount('error');
      await db.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      // The FATAL arrives while the client is idle and held: pg emits 'error' on it.
      const deadline = Date.now() + 5_000;
      while ((client as unknown as { _queryable: boolean })._queryable && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect((client as unknown as { _queryable: boolean })._queryable).toBe(false);
      expect(listeners).toBeGreaterThan(0);
      client.release(new Error('backend terminated'));
      // The pool replaces the dead connection.
      expect(await ds.query('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    } finally {
      await ds.destroy();
    }
  });

  // Found by the fault suite: POST /admin/orders answered 500 (not 503) when PostgreSQL shut
  // down mid-transaction, because TypeORM then throws QueryRunnerProviderAlreadyReleasedError.
  it.each([
    ['the next statement', true],
    ['the COMMIT', false],
  ])('a transaction whose connection dies before %s fails as "database unavailable"', async (_when, another) => {
    const ds = createDataSource(db.url, 4);
    await ds.initialize();
    try {
      const error = await ds
        .transaction(async (tx) => {
          const [{ pid }] = await tx.query('SELECT pg_backend_pid() AS pid');
          await db.query('SELECT pg_terminate_backend($1)', [pid]);
          await new Promise((r) => setTimeout(r, 200)); // the FATAL arrives while the transaction is idle
          if (another) await tx.query('SELECT 1');
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(Error);
      expect({ name: (error as Error).name, unavailable: isDatabaseUnavailable(error) }).toEqual({
        name: (error as Error).name,
        unavailable: true,
      });
    } finally {
      await ds.destroy();
    }
  });
});
