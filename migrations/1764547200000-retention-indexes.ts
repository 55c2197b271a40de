import { MigrationInterface, QueryRunner } from 'typeorm';
import type { PoolClient, QueryConfig } from 'pg';

/** An index build on a large inbox outlives the pool's 30 s query timeout. */
const BUILD_TIMEOUT_MS = 6 * 60 * 60 * 1000;
const INDEX = 'webhook_inbox_payload_retention';

/**
 * Retention's payload purge reads this partial index: it holds exactly the settled
 * rows whose payload is still there, so a purge batch never walks past rows purged
 * earlier (webhook_inbox_received would, through days of them). Identity deletion
 * and outbox pruning use webhook_inbox_received and outbox_created as they are.
 * Built CONCURRENTLY (outside a transaction) so ingestion keeps writing meanwhile.
 */
export class RetentionIndexes1764547200000 implements MigrationInterface {
  name = 'RetentionIndexes1764547200000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    // A concurrent build that failed leaves an invalid index behind: build it again.
    const [existing] = await q.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, [INDEX]);
    if (existing && !existing.indisvalid) await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS ${INDEX}`);
    await this.run(
      q,
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${INDEX} ON webhook_inbox (received_at)
        WHERE payload IS NOT NULL AND status IN ('done', 'ignored')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS ${INDEX}`);
  }

  private async run(q: QueryRunner, sql: string): Promise<void> {
    const client = (await q.connect()) as PoolClient;
    // pg reads a per-query `query_timeout` that its typings do not list.
    const query: QueryConfig & { query_timeout: number } = { text: sql, query_timeout: BUILD_TIMEOUT_MS };
    await client.query(query);
  }
}
