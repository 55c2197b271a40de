import { MigrationInterface, QueryRunner } from 'typeorm';
import { addColumn } from './concurrent-index';

/**
 * The W3C traceparent of the span that wrote each inbox and outbox row, so the
 * worker continues the request's trace and the relay the worker's. NULL when
 * tracing is off (every row then, and every row of an older instance).
 *
 * Rolling deploy: a nullable column without a default is a catalog change only
 * (no rewrite, no scan); its ACCESS EXCLUSIVE lock lasts milliseconds, and
 * lock_timeout stops it from queueing the hot statements behind a long
 * transaction (the migration fails and is retried at the next start instead).
 * An old instance never names the column: its inserts leave it NULL and its
 * reads ignore it, so its rows simply start new traces downstream.
 */
export class TraceContext1765152000000 implements MigrationInterface {
  name = 'TraceContext1765152000000';

  // Each ALTER in a transaction of its own, waiting 5 s at most for its lock: in one transaction the
  // inbox's lock was held while the outbox's was waited for, and every insert waited with it.
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await addColumn(q, 'webhook_inbox', 'trace_context', 'text');
    await addColumn(q, 'outbox', 'trace_context', 'text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox DROP COLUMN IF EXISTS trace_context`);
    await q.query(`ALTER TABLE webhook_inbox DROP COLUMN IF EXISTS trace_context`);
  }
}
