import { MigrationInterface, QueryRunner } from 'typeorm';
import { buildIndexConcurrently, runLong } from './concurrent-index';

/**
 * `orders_created`: retention deletes orders unchanged for RETENTION_ORDER_DAYS,
 * oldest first, and reads this index to find them (created_at never changes, so
 * order updates stay HOT). Built CONCURRENTLY: orders keep being written meanwhile.
 * An old instance during a rolling deploy neither reads nor needs it; it only pays
 * the index's upkeep on the orders it creates.
 */
export class LifecycleIndexes1765411200000 implements MigrationInterface {
  name = 'LifecycleIndexes1765411200000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await buildIndexConcurrently(q, 'orders_created', 'ON orders (created_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS orders_created');
  }
}
