import { MigrationInterface, QueryRunner } from 'typeorm';
import { buildIndexConcurrently, runLong } from './concurrent-index';

/**
 * Lookups of the event timeline: an event's outbox entries (by source_event_id)
 * and the audit rows on one target. CONCURRENTLY, so neither table is locked
 * against writes while the index builds (hence no transaction). source_event_id
 * is never updated, so the outbox's status updates stay HOT; the relay's
 * inserts pay one more index entry each (measured in docs/performance.md).
 * An old instance neither uses nor minds the indexes.
 */
export class TimelineIndexes1765065601000 implements MigrationInterface {
  name = 'TimelineIndexes1765065601000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    // Past the pool's query timeout on a large outbox; an invalid index a failed build left is built again.
    await buildIndexConcurrently(q, 'outbox_source_event', 'ON outbox (source_event_id)');
    await buildIndexConcurrently(q, 'admin_audit_target', 'ON admin_audit (target)');
  }

  async down(q: QueryRunner): Promise<void> {
    await runLong(q, `DROP INDEX CONCURRENTLY IF EXISTS admin_audit_target`);
    await runLong(q, `DROP INDEX CONCURRENTLY IF EXISTS outbox_source_event`);
  }
}
