import { MigrationInterface, QueryRunner } from 'typeorm';
import { addColumn, buildIndexConcurrently, runLong, runWithLockTimeout } from './concurrent-index';

/**
 * Payloads move out of the inbox row into `webhook_inbox_payloads`, partitioned by the
 * UTC day they were stored (issue 38): forgetting a day of payloads is dropping one
 * partition (O(1) WAL), no longer a non-HOT UPDATE per row (7-8 KB of WAL each).
 *
 * - `webhook_inbox_payloads (day, inbox_id)`: one row per accepted event, written by the
 *   accept statement itself; daily partitions `webhook_inbox_payloads_YYYYMMDD`, made by
 *   webhook_inbox_payload_day(d) (CREATE TABLE + ATTACH PARTITION: a SHARE UPDATE
 *   EXCLUSIVE lock on the parent, which inserts do not wait for). Made here for today and
 *   the next PAYLOAD_DAYS_AHEAD days, then kept ahead by every start and the retention job.
 *   No DEFAULT partition: it would forbid DETACH CONCURRENTLY and make every new day scan it.
 * - `webhook_inbox.payload_day`: the partition holding the row's payload (reads join on
 *   (payload_day, id), so they touch one partition). NULL on a legacy row, whose payload
 *   stays in the old columns, read by a fallback and purged row by row as before, until
 *   the payload window has passed over them all; then that path finds nothing.
 * - `webhook_inbox_open`: the open rows (pending, processing, quarantined), which keep their
 *   payload when their day is forgotten (carried to the current day). Keyed by id, not by
 *   payload_day: moving a row's payload_day then stays a HOT update (no index holds it).
 *
 * Live: a new empty table, a nullable column (no rewrite) and an index built CONCURRENTLY.
 *
 * Rolling deploy, what an instance of the previous version sees:
 * - it keeps writing payloads into the row (payload_day NULL): a legacy row, read by the
 *   new instances' fallback, purged by the row-by-row path (of either version);
 * - a row a new instance accepted has no payload in its columns: the old admin shows it
 *   purged and refuses its replay (409 payload_purged); the old erasure does not see it;
 * - an old worker claiming such a row quarantines it `payload_missing` without running a
 *   handler (no business effect); the new retention job puts it back to pending (the row
 *   still has its payload, in its day: REQUEUE_OLD_QUARANTINES). Nothing is lost or settled.
 *   To avoid even that, run the worker role only on new instances during the deploy.
 */
export class DayPayloads1765640000000 implements MigrationInterface {
  name = 'DayPayloads1765640000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS webhook_inbox_payloads (
        day date NOT NULL,
        inbox_id bigint NOT NULL,
        payload jsonb,
        payload_sealed bytea,
        payload_key_id text,
        PRIMARY KEY (day, inbox_id)
      ) PARTITION BY RANGE (day)`);
    // Key ids in use (a loose scan at start), rows per key, re-encryption batches by key.
    if (!(await q.query(`SELECT to_regclass('webhook_inbox_payloads_key') AS i`))[0].i)
      await runWithLockTimeout(
        q,
        `CREATE INDEX IF NOT EXISTS webhook_inbox_payloads_key ON webhook_inbox_payloads (payload_key_id, inbox_id)`,
      );
    await q.query(`
      CREATE OR REPLACE FUNCTION webhook_inbox_payload_day(d date) RETURNS boolean
      LANGUAGE plpgsql SET lock_timeout = '5s' AS $$
      DECLARE
        part text := 'webhook_inbox_payloads_' || to_char(d, 'YYYYMMDD');
      BEGIN
        -- One maker at a time (the retention job, every start, the forgetting of a day).
        PERFORM pg_advisory_xact_lock(hashtext('webhook_inbox_payloads'));
        IF EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass(part) AND inhparent = 'webhook_inbox_payloads'::regclass) THEN
          RETURN false;
        END IF;
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I (LIKE webhook_inbox_payloads INCLUDING DEFAULTS)', part);
        EXECUTE format('ALTER TABLE webhook_inbox_payloads ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, d, d + 1);
        RETURN true;
      END $$`);
    await q.query(`SELECT webhook_inbox_payload_day(d::date)
                     FROM generate_series((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + 7, interval '1 day') d`);
    await addColumn(q, 'webhook_inbox', 'payload_day', 'date');
    await buildIndexConcurrently(q, 'webhook_inbox_open', `ON webhook_inbox (id) WHERE status IN ('pending', 'processing', 'quarantined')`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Payloads already in days go back to their rows: an older version reads only there.
    await q.query(`
      UPDATE webhook_inbox i SET payload = p.payload, payload_sealed = p.payload_sealed, payload_key_id = p.payload_key_id, payload_day = NULL
        FROM webhook_inbox_payloads p WHERE p.day = i.payload_day AND p.inbox_id = i.id`);
    await runLong(q, 'DROP INDEX CONCURRENTLY IF EXISTS webhook_inbox_open');
    await runWithLockTimeout(q, `ALTER TABLE webhook_inbox DROP COLUMN IF EXISTS payload_day`);
    await q.query(`DROP TABLE IF EXISTS webhook_inbox_payloads`);
    await q.query(`DROP FUNCTION IF EXISTS webhook_inbox_payload_day(date)`);
  }
}
