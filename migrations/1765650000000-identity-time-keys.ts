import { MigrationInterface, QueryRunner } from 'typeorm';
import { addColumn, buildIndexConcurrently, runLong, runWithLockTimeout } from './concurrent-index';

/**
 * Time-led identity keys (issue 38). An event's identity was (source_scope, event_id): ids
 * are random, so at month scale each insert into the unique index lands on a leaf anywhere in
 * a month of ids (a disk read and a full-page image per event once the index outgrows memory).
 * The key becomes (identity_at, source_scope, event_id), identity_at being the time the sender
 * states for the event (VerifiedEvent.occurredAt, the same in every delivery), so inserts go
 * to the index's recent end; NULL for a sender that states none, NULLS NOT DISTINCT so those
 * rows still conflict on (source_scope, event_id) exactly.
 *
 * Expand, then contract (src/inbox/identity-keys.ts):
 * - this migration adds the nullable column, the table recording from which stated time the
 *   inbox keys by time, and the new unique index (CONCURRENTLY). On a populated inbox nothing
 *   else changes: every instance keeps inserting with identity_at NULL against the old
 *   constraint webhook_inbox_identity, so an old instance beside a new one during the rolling
 *   deploy sees the schema it knows plus a column it does not write.
 * - `npm run cli -- time-keys`, once no old instance runs, records a start time a day ahead
 *   (TIME_KEYS_LEAD_MS) and drops the old constraint: events stated from then on are keyed by time;
 *   any event stated earlier keeps identity_at NULL, so a resend of a row written before the
 *   switch still meets it.
 * - on a new install (an inbox that never held a row: its id sequence was never used) the
 *   migration switches at once, from -infinity: under the table's lock, so no row an old
 *   instance commits meanwhile is left with a NULL key. An upgraded inbox that retention
 *   happens to have emptied is not new: instances of the previous version may still run, and
 *   with the old constraint dropped under them they would answer 503 to every webhook.
 */
/** No row now, and none ever: the id sequence was never called (a deleted row used it). */
const NEVER_USED = `NOT EXISTS (SELECT 1 FROM webhook_inbox)
  AND pg_sequence_last_value(pg_get_serial_sequence('webhook_inbox', 'id')::regclass) IS NULL`;

export class IdentityTimeKeys1765650000000 implements MigrationInterface {
  name = 'IdentityTimeKeys1765650000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await addColumn(q, 'webhook_inbox', 'identity_at', 'timestamptz');
    await q.query(`
      CREATE TABLE IF NOT EXISTS webhook_inbox_time_keys (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        keyed_from timestamptz NOT NULL,
        switched_at timestamptz NOT NULL DEFAULT now()
      )`);
    await buildIndexConcurrently(
      q,
      'webhook_inbox_identity_time',
      'ON webhook_inbox (identity_at, source_scope, event_id) NULLS NOT DISTINCT',
      'UNIQUE INDEX',
    );
    // A used inbox is never locked here; a new one is, and looked at again under the lock.
    const [{ fresh }] = await q.query(`SELECT ${NEVER_USED} AS fresh`);
    if (fresh) {
      await runWithLockTimeout(
        q,
        `
        DO $$ BEGIN
          LOCK TABLE webhook_inbox IN ACCESS EXCLUSIVE MODE;
          IF ${NEVER_USED} THEN
            INSERT INTO webhook_inbox_time_keys (keyed_from) VALUES ('-infinity') ON CONFLICT DO NOTHING;
            ALTER TABLE webhook_inbox DROP CONSTRAINT IF EXISTS webhook_inbox_identity;
          END IF;
        END $$`,
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    // The id-only constraint again: its index built CONCURRENTLY (inserts go on), then taken over.
    if (!(await q.query(`SELECT 1 FROM pg_constraint WHERE conname = 'webhook_inbox_identity'`))[0]) {
      await buildIndexConcurrently(q, 'webhook_inbox_identity', 'ON webhook_inbox (source_scope, event_id)', 'UNIQUE INDEX');
      await runWithLockTimeout(
        q,
        `ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_identity UNIQUE USING INDEX webhook_inbox_identity`,
      );
    }
    await q.query(`DROP TABLE IF EXISTS webhook_inbox_time_keys`);
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS webhook_inbox_identity_time');
    await runWithLockTimeout(q, `ALTER TABLE webhook_inbox DROP COLUMN IF EXISTS identity_at`);
  }
}
