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
