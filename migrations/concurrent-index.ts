import type { PoolClient, QueryConfig } from 'pg';
import { QueryRunner } from 'typeorm';

/** An index build on a large table outlives the pool's 30 s query timeout. */
const BUILD_TIMEOUT_MS = 6 * 60 * 60 * 1000;

/**
 * Builds an index CONCURRENTLY (the migration must set `transaction = false`): writers
 * keep going meanwhile. A concurrent build that failed leaves an invalid index behind,
 * which is dropped and built again.
 */
export async function buildIndexConcurrently(q: QueryRunner, name: string, definition: string, kind = 'INDEX'): Promise<void> {
  const [existing] = await q.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, [name]);
  if (existing && !existing.indisvalid) await runLong(q, `DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await runLong(q, `CREATE ${kind} CONCURRENTLY IF NOT EXISTS ${name} ${definition}`);
}

export async function runLong(q: QueryRunner, sql: string): Promise<void> {
  const client = (await q.connect()) as PoolClient;
  // pg reads a per-query `query_timeout` that its typings do not list.
  const query: QueryConfig & { query_timeout: number } = { text: sql, query_timeout: BUILD_TIMEOUT_MS };
  await client.query(query);
}

/**
 * A statement that takes a short ACCESS EXCLUSIVE (or SHARE) lock on a hot table, in a migration
 * without a transaction: it waits at most 5 s for the lock, so it never queues every insert and
 * claim behind a long transaction (a dump, a report); it fails instead and the migration is run
 * again at the next start.
 */
export async function runWithLockTimeout(q: QueryRunner, sql: string): Promise<void> {
  await q.query(`SET lock_timeout = '5s'`);
  try {
    await q.query(sql);
  } finally {
    await q.query('RESET lock_timeout');
  }
}

/** ADD COLUMN (nullable, no default: a catalog change) under runWithLockTimeout; a rerun that finds it takes no lock. */
export async function addColumn(q: QueryRunner, table: string, column: string, type: string): Promise<void> {
  const [found] = await q.query(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`,
    [table, column],
  );
  if (!found) await runWithLockTimeout(q, `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type}`);
}
