import { MigrationInterface, QueryRunner } from 'typeorm';
import { addColumn } from './concurrent-index';
import type { PoolClient, QueryConfig } from 'pg';

/** An index build on a large inbox outlives the pool's 30 s query timeout. */
const BUILD_TIMEOUT_MS = 6 * 60 * 60 * 1000;

/** Where a payload may be: clear (`payload`) or sealed (`payload_sealed`, under `payload_key_id`). */
const STORED = '(payload IS NOT NULL OR payload_sealed IS NOT NULL)';

const INDEXES: [name: string, definition: string][] = [
  // Key ids in use (a loose scan at start), rows per key, and the re-encryption's batches by key.
  ['webhook_inbox_payload_key', `ON webhook_inbox (payload_key_id, id) WHERE ${STORED}`],
  // Replaces webhook_inbox_payload_retention: the purge must find sealed payloads too.
  ['webhook_inbox_payload_expiry', `ON webhook_inbox (received_at) WHERE ${STORED} AND status IN ('done', 'ignored')`],
];

/**
 * Payloads at rest: a sealed form (AES-256-GCM, see src/crypto) beside the clear
 * jsonb, and the id of the key that sealed it. Nullable columns (no rewrite), indexes
 * built CONCURRENTLY (outside a transaction) so ingestion keeps writing meanwhile.
 *
 * Rolling deploy: an instance of the previous version ignores the new columns and
 * keeps storing and reading clear payloads; its retention purge loses its partial
 * index and falls back to webhook_inbox_received (slower, same result). It would
 * quarantine a sealed row as `payload_missing`, so PAYLOAD_KEYS is set only once
 * every instance runs this version (docs/operations.md).
 */
export class PayloadEncryption1764979200000 implements MigrationInterface {
  name = 'PayloadEncryption1764979200000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    // Each waits 5 s at most for its lock (runWithLockTimeout): queued behind a long reader, it would hold up every insert.
    await addColumn(q, 'webhook_inbox', 'payload_sealed', 'bytea');
    await addColumn(q, 'webhook_inbox', 'payload_key_id', 'text');
    for (const [name, definition] of INDEXES) {
      // A concurrent build that failed leaves an invalid index behind: build it again.
      const [existing] = await q.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, [name]);
      if (existing && !existing.indisvalid) await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
      await this.run(q, `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ${definition}`);
    }
    await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS webhook_inbox_payload_retention`);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.run(
      q,
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_inbox_payload_retention ON webhook_inbox (received_at)
        WHERE payload IS NOT NULL AND status IN ('done', 'ignored')`,
    );
    for (const [name] of INDEXES) await this.run(q, `DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    await q.query(`ALTER TABLE webhook_inbox DROP COLUMN IF EXISTS payload_sealed, DROP COLUMN IF EXISTS payload_key_id`);
  }

  private async run(q: QueryRunner, sql: string): Promise<void> {
    const client = (await q.connect()) as PoolClient;
    // pg reads a per-query `query_timeout` that its typings do not list.
    const query: QueryConfig & { query_timeout: number } = { text: sql, query_timeout: BUILD_TIMEOUT_MS };
    await client.query(query);
  }
}
