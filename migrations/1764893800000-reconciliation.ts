import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation (issue 19): per endpoint, the cursor up to which the provider's
 * events were compared with the inbox; each run (scheduled or requested by an
 * operator) with its window, position and counts. New tables only: an old instance
 * never touches them.
 */
export class Reconciliation1764893800000 implements MigrationInterface {
  name = 'Reconciliation1764893800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS reconciliation_cursors (
        endpoint_id     text        PRIMARY KEY,
        cursor_at       timestamptz NOT NULL,
        last_success_at timestamptz,
        updated_at      timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS reconciliation_runs (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        endpoint_id    text        NOT NULL,
        requested_by   text        NOT NULL,
        reason         text        NOT NULL,
        dry_run        boolean     NOT NULL DEFAULT false,
        window_from    timestamptz,
        window_to      timestamptz,
        advances_cursor boolean    NOT NULL,
        status         text        NOT NULL DEFAULT 'requested'
                       CHECK (status IN ('requested','running','succeeded','failed')),
        position       text,
        listed         integer     NOT NULL DEFAULT 0,
        found_missing  integer     NOT NULL DEFAULT 0,
        accepted       integer     NOT NULL DEFAULT 0,
        api_calls      integer     NOT NULL DEFAULT 0,
        error          text,
        locked_by      text,
        locked_until   timestamptz,
        requested_at   timestamptz NOT NULL DEFAULT now(),
        started_at     timestamptz,
        finished_at    timestamptz
      )`);
    // One run of an endpoint at a time, across instances; and one waiting.
    await q.query(
      `CREATE UNIQUE INDEX IF NOT EXISTS reconciliation_runs_one_running ON reconciliation_runs (endpoint_id) WHERE status = 'running'`,
    );
    await q.query(
      `CREATE UNIQUE INDEX IF NOT EXISTS reconciliation_runs_one_requested ON reconciliation_runs (endpoint_id) WHERE status = 'requested'`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS reconciliation_runs_endpoint ON reconciliation_runs (endpoint_id, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE IF EXISTS reconciliation_runs');
    await q.query('DROP TABLE IF EXISTS reconciliation_cursors');
  }
}
