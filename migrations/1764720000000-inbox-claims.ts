import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The worker's claim journal. A worker holds its events with row locks inside
 * the one transaction that processes them, which writes nothing to claim them;
 * a lock leaves no trace when its process dies, so before processing it
 * records which events it holds here, in its own commit, and deletes that row
 * in the processing transaction. A row still here whose owner no longer holds
 * the advisory lock `lock_key` is an attempt that ended without an outcome:
 * recovery counts it on each of its events (an event that kills its workers is
 * quarantined at the attempt limit). Rows live for one transaction.
 */
export class InboxClaims1764720000000 implements MigrationInterface {
  name = 'InboxClaims1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE inbox_claims (
        lock_key   bigint      PRIMARY KEY,
        worker     text        NOT NULL,
        event_ids  bigint[]    NOT NULL,
        claimed_at timestamptz NOT NULL DEFAULT now()
      ) WITH (autovacuum_vacuum_cost_delay = 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE inbox_claims');
  }
}
