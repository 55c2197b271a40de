import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `webhook_rejections`: the sampled log of refused webhook requests (rejection-log.ts):
 * when, which endpoint, the stable reason, the client's address and the sizes. Never a
 * header value, a body or a secret. Bounded per endpoint by REJECTION_LOG_PER_MINUTE (at
 * the write) and REJECTION_LOG_MAX_ROWS and RETENTION_REJECTION_DAYS (the retention job).
 *
 * Rolling deploy: a new, empty table with its indexes (no lock on any existing table).
 * An old instance neither writes nor reads it.
 */
export class RejectionLog1765630000000 implements MigrationInterface {
  name = 'RejectionLog1765630000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS webhook_rejections (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at timestamptz NOT NULL,
        endpoint_id text NOT NULL,
        tenant_id text NOT NULL,
        provider text NOT NULL,
        reason text NOT NULL,
        http_status smallint NOT NULL,
        remote_address text NOT NULL,
        declared_bytes bigint,
        received_bytes integer,
        unlogged_before integer NOT NULL DEFAULT 0
      )`);
    // Age retention and the admin list (newest first).
    await q.query(`CREATE INDEX IF NOT EXISTS webhook_rejections_at ON webhook_rejections (at, id)`);
    // The per-endpoint cap (the N-th newest row of an endpoint) and the list filtered by endpoint.
    await q.query(`CREATE INDEX IF NOT EXISTS webhook_rejections_endpoint_at ON webhook_rejections (endpoint_id, at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE IF EXISTS webhook_rejections');
  }
}
