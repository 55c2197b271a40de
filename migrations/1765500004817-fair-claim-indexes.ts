import { MigrationInterface, QueryRunner } from 'typeorm';
import { buildIndexConcurrently, runLong } from './concurrent-index';

/**
 * The fair claims (issue 34) walk the tenants with pending work and take each one's
 * due rows in turn: `webhook_inbox_due_tenant` for the worker's claim, and
 * `outbox_due_destination_tenant` for the relay's, within each destination. Built
 * CONCURRENTLY: the queues keep moving meanwhile. They replace webhook_inbox_due and
 * outbox_due_destination (dropped once the new ones are built): beside the old ones
 * the planner read a tenant's rows through the old order with a filter, and every
 * pending row would pay two indexes. An old instance during a rolling deploy claims
 * in one global order through the new index: correct, but each of its claims reads
 * every due row (a top-N sort) until it is replaced.
 */
export class FairClaimIndexes1765500004817 implements MigrationInterface {
  name = 'FairClaimIndexes1765500004817';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await buildIndexConcurrently(q, 'webhook_inbox_due_tenant', `ON webhook_inbox (tenant_id, next_attempt_at) WHERE status = 'pending'`);
    await buildIndexConcurrently(
      q,
      'outbox_due_destination_tenant',
      `ON outbox (destination, tenant_id, next_attempt_at) WHERE status = 'pending'`,
    );
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS webhook_inbox_due');
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS outbox_due_destination');
  }

  async down(q: QueryRunner): Promise<void> {
    await buildIndexConcurrently(q, 'webhook_inbox_due', `ON webhook_inbox (next_attempt_at) WHERE status = 'pending'`);
    await buildIndexConcurrently(q, 'outbox_due_destination', `ON outbox (destination, next_attempt_at) WHERE status = 'pending'`);
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS outbox_due_destination_tenant');
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS webhook_inbox_due_tenant');
  }
}
