import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * Runs one autocommit statement as a named prepared statement on a pooled
 * connection: PostgreSQL parses and plans it once per connection instead of on
 * every call. For the hot, fixed-shape statements (claims, group commit) that
 * run hundreds of times a second. Check the plan a prepared statement settles
 * on: after five runs PostgreSQL may keep a generic plan. For the claims that
 * plan is the cheap one (0.2 ms instead of 1.4 ms per claim at 300 events/s);
 * for the relay's unnest-joined outcome update it was three times slower, so
 * that one stays unnamed.
 */
export async function queryPrepared<R>(dataSource: DataSource, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = (dataSource.driver as PostgresDriver).master as Pool;
  return (await pool.query({ name, text, values })).rows as R[];
}
