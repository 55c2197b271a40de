import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `worker_limit_buckets`: a row per tenant or endpoint that has a limit (issue 34,
 * src/inbox/worker-limits.ts): its rate's tokens, and the row every instance's limited
 * claim locks, so that their counts of the key's events in flight agree.
 *
 * Rolling deploy: a new table. An old instance neither reads nor writes it, and claims
 * without limits as before.
 */
export class WorkerLimits1765660000000 implements MigrationInterface {
  name = 'WorkerLimits1765660000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS worker_limit_buckets (
        key text PRIMARY KEY,
        tokens double precision NOT NULL,
        refilled_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS worker_limit_buckets`);
  }
}
