import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a reconciliation run's acceptance path did with the events it found
 * missing, beside `accepted` (now those accepted for processing only): a flat
 * map of counts, `duplicate`, `ignored:<reason>` and `invalid:<reason>`.
 *
 * Rolling deploy: a nullable column without a default is a catalog change only;
 * lock_timeout keeps it from queueing behind a long transaction. An old instance
 * never names it: a run it executes leaves it NULL (the admin API then shows the
 * new counts as null, "not recorded") and still counts ignored events in
 * `accepted`, as it always did.
 */
export class ReconciliationOutcomes1765325000000 implements MigrationInterface {
  name = 'ReconciliationOutcomes1765325000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`ALTER TABLE reconciliation_runs ADD COLUMN IF NOT EXISTS outcomes jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE reconciliation_runs DROP COLUMN IF EXISTS outcomes`);
  }
}
