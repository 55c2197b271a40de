import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The inbox and outbox are queues: every row is updated two or three times and
 * then rests. With the default 20% scale factor a table of millions of settled
 * rows would collect hundreds of thousands of dead tuples before a vacuum, and
 * the claim scans of the partial "due" indexes would wade through them. Vacuum
 * after about 1% instead, without cost-based sleeping.
 */
export class QueueAutovacuum1764633600000 implements MigrationInterface {
  name = 'QueueAutovacuum1764633600000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['webhook_inbox', 'outbox']) {
      await q.query(`
        ALTER TABLE ${table} SET (
          autovacuum_vacuum_scale_factor = 0.01,
          autovacuum_vacuum_threshold = 1000,
          autovacuum_vacuum_insert_scale_factor = 0.05,
          autovacuum_analyze_scale_factor = 0.02,
          autovacuum_vacuum_cost_delay = 0
        )`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['webhook_inbox', 'outbox']) {
      await q.query(`
        ALTER TABLE ${table} RESET (
          autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_insert_scale_factor,
          autovacuum_analyze_scale_factor, autovacuum_vacuum_cost_delay
        )`);
    }
  }
}
