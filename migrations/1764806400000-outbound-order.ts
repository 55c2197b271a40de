import { MigrationInterface, QueryRunner } from 'typeorm';
import type { PoolClient, QueryConfig } from 'pg';
import { runWithLockTimeout } from './concurrent-index';

/** An index build on a large outbox outlives the pool's 30 s query timeout. */
const BUILD_TIMEOUT_MS = 6 * 60 * 60 * 1000;

/**
 * Outbound order and destination flow control (docs/guarantees.md, "Outbound order").
 *
 * - `aggregate`, `aggregate_seq`: nullable, so adding them is a catalog change only. The
 *   ALTER still needs a moment's ACCESS EXCLUSIVE lock: `lock_timeout` makes it give up
 *   (the migration fails and is run again) instead of queueing every writer behind a long
 *   transaction. Rows written before have no aggregate and are never held.
 * - `outbox_aggregate` (unique, built CONCURRENTLY): the writer's next sequence and the
 *   claim's "is an earlier entry undelivered" probe; unique so that two writers racing on
 *   one aggregate cannot both take a number (the second one fails and is retried).
 * - `outbox_due_destination` replaces `outbox_due`: the relay claims per destination, so a
 *   destination whose circuit is open leaves its backlog unread instead of making every
 *   claim walk past it.
 * - `outbox_destinations`: one row per destination, the circuit, pause and rate-limit state
 *   shared by every relay instance.
 *
 * What an old instance sees during a rolling deploy: its writer inserts rows without an
 * aggregate (never held), its relay claims `pending` rows by `next_attempt_at` through
 * `outbox_due_destination` (correct, a sort of the due rows instead of an ordered scan) and
 * knows nothing of holds or circuits. Run old and new relays side by side only briefly:
 * an old relay may send a later entry of an aggregate whose earlier one a new relay holds.
 */
export class OutboundOrder1764806400000 implements MigrationInterface {
  name = 'OutboundOrder1764806400000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await runWithLockTimeout(
      q,
      `ALTER TABLE outbox ADD COLUMN IF NOT EXISTS aggregate text, ADD COLUMN IF NOT EXISTS aggregate_seq integer`,
    );
    await this.index(
      q,
      'outbox_aggregate',
      `CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS outbox_aggregate
      ON outbox (tenant_id, aggregate, aggregate_seq) WHERE aggregate IS NOT NULL`,
    );
    await this.index(
      q,
      'outbox_due_destination',
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_due_destination
      ON outbox (destination, next_attempt_at) WHERE status = 'pending'`,
    );
    await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS outbox_due`);
    await this.run(
      q,
      `CREATE TABLE IF NOT EXISTS outbox_destinations (
        destination  text        PRIMARY KEY,
        circuit      text        NOT NULL DEFAULT 'closed' CHECK (circuit IN ('closed', 'open', 'half_open')),
        failures     integer     NOT NULL DEFAULT 0,
        retry_at     timestamptz,
        probe_until  timestamptz,
        paused_until timestamptz,
        tokens       double precision,
        tokens_at    timestamptz,
        last_error   text,
        changed_at   timestamptz,
        version      bigint      NOT NULL DEFAULT 0
      )`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await this.run(q, `DROP TABLE IF EXISTS outbox_destinations`);
    await this.index(
      q,
      'outbox_due',
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_due ON outbox (next_attempt_at) WHERE status = 'pending'`,
    );
    await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS outbox_due_destination`);
    await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS outbox_aggregate`);
    await this.run(q, `ALTER TABLE outbox DROP COLUMN IF EXISTS aggregate_seq, DROP COLUMN IF EXISTS aggregate`);
  }

  /** A concurrent build that failed leaves an invalid index behind: build it again. */
  private async index(q: QueryRunner, name: string, sql: string): Promise<void> {
    const [existing] = await q.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, [name]);
    if (existing && !existing.indisvalid) await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    await this.run(q, sql);
  }

  private async run(q: QueryRunner, sql: string): Promise<void> {
    const client = (await q.connect()) as PoolClient;
    // pg reads a per-query `query_timeout` that its typings do not list.
    const query: QueryConfig & { query_timeout: number } = { text: sql, query_timeout: BUILD_TIMEOUT_MS };
    await client.query(query);
  }
}
