import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * expect_rows(actual, expected, reason): `actual` when it equals `expected`, else an error
 * (SQLSTATE P0001, the message `reason`). A statement sent without waiting for its
 * answer (transactionWithAfterCommit pipelines the worker's writes with the COMMIT)
 * asserts its own outcome with it, e.g. that the fenced completion still held every
 * lease: the failure aborts the transaction before the COMMIT, where a check in code
 * would come too late.
 *
 * Rolling deploy: creating a function takes no lock on any table. An old instance
 * never calls it.
 */
export class ExpectRows1765238400000 implements MigrationInterface {
  name = 'ExpectRows1765238400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION expect_rows(actual bigint, expected bigint, reason text) RETURNS bigint
      LANGUAGE plpgsql AS $$
      BEGIN
        IF actual IS DISTINCT FROM expected THEN
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = reason, DETAIL = format('%s rows, %s expected', actual, expected);
        END IF;
        RETURN actual;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS expect_rows(bigint, bigint, text)`);
  }
}
