import { MigrationInterface, QueryRunner } from 'typeorm';
import { buildIndexConcurrently, runLong } from './concurrent-index';

/**
 * `activity_minutes`: per minute, per endpoint or destination and tenant, what was
 * accepted, done, quarantined, delivered and failed, and the open backlog the
 * maintenance role saw; the console's charts read it (a week of it is a few
 * thousand rows per scope, where the source tables hold millions). `activity_rollup`
 * is its cursor; `activity_hours` holds the same summed per hour, for the week's chart. The maintenance role finds a minute's attempts by their `at`: the
 * two attempt tables are insert-only, so their new indexes cost one btree insert per
 * attempt and never touch the inbox's or the outbox's HOT updates.
 *
 * Rolling deploy: new tables and CONCURRENTLY built indexes (writers go on). An old
 * instance neither reads nor writes the tables; it pays the indexes' upkeep on the
 * attempts it writes.
 */
export class ActivityMinutes1765548317000 implements MigrationInterface {
  name = 'ActivityMinutes1765548317000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS activity_minutes (
        minute timestamptz NOT NULL,
        kind text NOT NULL CHECK (kind IN ('endpoint', 'destination')),
        scope text NOT NULL,
        tenant_id text NOT NULL,
        accepted integer NOT NULL DEFAULT 0,
        done integer NOT NULL DEFAULT 0,
        quarantined integer NOT NULL DEFAULT 0,
        delivered integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        backlog integer,
        oldest_pending_age_seconds integer,
        PRIMARY KEY (minute, kind, scope, tenant_id)
      )`);
    // The same per hour (the week's chart reads 168 rows per scope, not 10,080).
    await q.query(`CREATE TABLE IF NOT EXISTS activity_hours (LIKE activity_minutes INCLUDING ALL)`);
    await q.query(`CREATE TABLE IF NOT EXISTS activity_rollup (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        rolled_to timestamptz NOT NULL
      )`);
    await buildIndexConcurrently(q, 'webhook_inbox_attempts_at', 'ON webhook_inbox_attempts (at)');
    await buildIndexConcurrently(q, 'outbox_attempts_at', 'ON outbox_attempts (at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS outbox_attempts_at');
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS webhook_inbox_attempts_at');
    await q.query('DROP TABLE IF EXISTS activity_rollup');
    await q.query('DROP TABLE IF EXISTS activity_hours');
    await q.query('DROP TABLE IF EXISTS activity_minutes');
  }
}
