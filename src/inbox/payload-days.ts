import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, QueryRunner } from 'typeorm';
import { runInTransaction } from '../database/unit-of-work';
import { ERASABLE_STATUSES } from './inbox-admin.queries';
import { OPEN_STATUSES, PAYLOAD_PARTITIONS, PAYLOAD_TODAY } from './inbox.queries';

/**
 * Days of payload partitions kept made ahead of today: an insert never finds its day
 * missing unless neither the retention job (every minute) nor any start ran for a week;
 * then the accept makes today's and tries again (InboxRepository.acceptMany). A DEFAULT
 * partition would catch such rows instead, but forbid DETACH CONCURRENTLY and make
 * every new day scan it.
 */
export const PAYLOAD_DAYS_AHEAD = 7;

/**
 * Runs `sqlOf(table)` with `[day, ...params]` on each payload day detached and not yet dropped
 * (rare: a row held at the carry after the detach keeps its day for the next run), for readers
 * that must not miss the open rows' payloads waiting there. A day another instance drops
 * meanwhile (42P01) has nothing left to read: it is dropped only once no open row points at it.
 */
export async function readDetachedDays<R>(dataSource: DataSource, sqlOf: (table: string) => string, params: unknown[] = []): Promise<R[]> {
  const days: { name: string; day: string; attached: boolean; detach_pending: boolean }[] = await dataSource.query(PAYLOAD_PARTITIONS);
  const rows: R[] = [];
  for (const d of days.filter((p) => !p.attached || p.detach_pending)) {
    try {
      rows.push(...((await dataSource.query(sqlOf(d.name), [d.day, ...params])) as R[]));
    } catch (error) {
      if ((error as { code?: string }).code !== '42P01') throw error;
    }
  }
  return rows;
}

/** How long forgetting a day waits for its lock (DETACH CONCURRENTLY) before leaving it to the next run. */
const DETACH_LOCK_TIMEOUT = '5s';

/**
 * A carry's first statement: locks up to $2 open rows (pending, processing, quarantined) after
 * id $3 whose payloads are in day $1, along webhook_inbox_open (the open rows only, in id
 * order). SKIP LOCKED: a row held right now is carried by a later pass.
 */
const LOCK_OPEN_OF_DAY = `
  SELECT i.id FROM webhook_inbox i
   WHERE i.status IN ${OPEN_STATUSES} AND i.id > $3::bigint AND i.payload_day = $1::date
   ORDER BY i.id LIMIT $2
     FOR UPDATE SKIP LOCKED`;

/**
 * The carry's second statement, with the rows $2 locked: copies their payloads from day $1 of
 * `source` (the partitioned table, or a day already detached from it) into today's partition,
 * and points the rows there. A statement of its own, so it reads the payloads as they are now:
 * an erasure or a re-sealing that held a row until after the first statement's snapshot is
 * carried, not undone. payload_day is in no index, so the row's update is HOT: a few hundred
 * bytes of WAL each, not a new version in every index.
 */
function carryLocked(source: string): string {
  return `
  WITH copied AS (
    INSERT INTO webhook_inbox_payloads (day, inbox_id, payload, payload_sealed, payload_key_id)
    SELECT ${PAYLOAD_TODAY}, s.inbox_id, s.payload, s.payload_sealed, s.payload_key_id
      FROM ${source} s
     WHERE s.day = $1::date AND s.inbox_id = ANY($2::bigint[])
    ON CONFLICT DO NOTHING
  )
  UPDATE webhook_inbox SET payload_day = ${PAYLOAD_TODAY} WHERE id = ANY($2::bigint[])`;
}

/** Open rows still pointing at day $1 (held by someone while it was being carried). */
const OPEN_LEFT = `SELECT count(*)::int AS n FROM webhook_inbox WHERE payload_day = $1::date AND status IN ${OPEN_STATUSES}`;

/**
 * Deletes the payloads of up to $2 settled rows in days from today on and before $1, row by
 * row: only when the application's clock runs ahead of the database's by more than the
 * payload window (tests with a fake clock), as today's partition cannot be dropped.
 */
const PURGE_UNDROPPABLE_DAYS = `
  WITH gone AS (
    SELECT i.id, i.payload_day FROM webhook_inbox_payloads wp JOIN webhook_inbox i ON i.id = wp.inbox_id AND i.payload_day = wp.day
     WHERE wp.day >= ${PAYLOAD_TODAY} AND wp.day < $1::date AND i.status IN ${ERASABLE_STATUSES}
     LIMIT $2
       FOR UPDATE OF i SKIP LOCKED
  )
  DELETE FROM webhook_inbox_payloads wp USING gone g
   WHERE wp.day = g.payload_day AND wp.inbox_id = g.id
     -- The same days again: with the clocks agreeing (production) no partition is even opened.
     AND wp.day >= ${PAYLOAD_TODAY} AND wp.day < $1::date`;

/**
 * Rows an instance of the version before day payloads quarantined `payload_missing` (it reads
 * the payload only from the row) while their payload is in their day: back to pending, due now.
 * Such rows are among the newest: only the last OLD_QUARANTINE_WINDOW open rows are looked at
 * (webhook_inbox_open backwards), so a run every minute stays bounded by that, not by the open
 * rows in all (quarantined ones are kept for months). A row whose payload really is gone stays.
 */
const OLD_QUARANTINE_WINDOW = 10_000;
const REQUEUE_OLD_QUARANTINES = `
  UPDATE webhook_inbox i
     SET status = 'pending', status_reason = NULL, completed_at = NULL, next_attempt_at = now(),
         last_error = 'payload_missing: quarantined by an older instance, requeued'
    FROM (SELECT id FROM webhook_inbox WHERE status IN ${OPEN_STATUSES} ORDER BY id DESC LIMIT ${OLD_QUARANTINE_WINDOW}) recent
   WHERE i.id = recent.id AND i.status = 'quarantined' AND i.status_reason = 'payload_missing' AND i.payload_day IS NOT NULL
     AND EXISTS (SELECT 1 FROM webhook_inbox_payloads wp WHERE wp.day = i.payload_day AND wp.inbox_id = i.id)`;

export interface ForgottenDays {
  /** Partitions dropped. */
  dropped: string[];
  /** Open rows whose payload was carried to today. */
  carried: number;
  /** Days due but left to a later run (rows held, or the lock not had in time). */
  deferred: string[];
}

/** UTC calendar day of `date`, as YYYY-MM-DD. */
export function dayOf(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/**
 * The payloads' days (webhook_inbox_payloads, one partition per UTC day): made ahead of
 * need, and forgotten whole once past the payload window by dropping the partition, so
 * forgetting a day writes a few catalog rows of WAL however many payloads it held.
 */
@Injectable()
export class PayloadDays implements OnApplicationBootstrap {
  private readonly logger = new Logger(PayloadDays.name);

  constructor(private readonly dataSource: DataSource) {}

  /** Every start makes the days ahead too: ingestion does not depend on the retention job alone. */
  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.makeAhead();
    } catch (error) {
      // The days made before (a week ahead) still take the inserts; the retention job tries again.
      this.logger.warn({ err: (error as Error).message }, 'payload days not made ahead at start');
    }
  }

  /** Makes today's partition and the PAYLOAD_DAYS_AHEAD next ones (those missing); returns the days made. */
  async makeAhead(from?: string, to?: string): Promise<string[]> {
    const rows: { day: string }[] = await this.dataSource.query(
      `SELECT to_char(d, 'YYYY-MM-DD') AS day FROM generate_series(coalesce($1::date, ${PAYLOAD_TODAY}),
              coalesce($2::date, ${PAYLOAD_TODAY} + ${PAYLOAD_DAYS_AHEAD}), interval '1 day') d
        WHERE webhook_inbox_payload_day(d::date)`,
      [from ?? null, to ?? null],
    );
    return rows.map((r) => r.day);
  }

  /**
   * Forgets every day before `cutoff` (and before the database's today, which takes the
   * inserts): the payloads of open rows are carried to today in batches of `batch`, then the
   * partition is detached (CONCURRENTLY: inserts never wait) and dropped. A day whose rows
   * cannot all be carried now (before its detach or after it), or whose lock is not had in
   * time, is left to the next run. `cutoff` undefined (payloads kept for ever): only a day an
   * earlier run detached is finished.
   */
  async forgetBefore(cutoff: string | undefined, batch: number, stopped: () => boolean = () => false): Promise<ForgottenDays> {
    const result: ForgottenDays = { dropped: [], carried: 0, deferred: [] };
    // One instance forgets at a time (a session lock on a connection of its own, for the detach too).
    const session = this.dataSource.createQueryRunner();
    await session.connect();
    try {
      const [{ locked }]: { locked: boolean }[] = await session.query(
        `SELECT pg_try_advisory_lock(hashtext('webhook_inbox_payloads_forget')) AS locked`,
      );
      if (!locked) return result;
      try {
        await this.forgetDays(session, cutoff, batch, stopped, result);
      } finally {
        await session.query(`SELECT pg_advisory_unlock(hashtext('webhook_inbox_payloads_forget'))`);
      }
      return result;
    } finally {
      await session.release();
    }
  }

  private async forgetDays(
    session: QueryRunner,
    cutoff: string | undefined,
    batch: number,
    stopped: () => boolean,
    result: ForgottenDays,
  ): Promise<void> {
    const [{ today }]: { today: string }[] = await this.dataSource.query(`SELECT to_char(${PAYLOAD_TODAY}, 'YYYY-MM-DD') AS today`);
    const partitions: { name: string; day: string; attached: boolean; detach_pending: boolean }[] =
      await this.dataSource.query(PAYLOAD_PARTITIONS);
    for (const p of partitions) {
      if (stopped()) break;
      // A day detached by an earlier run is finished whatever the cutoff is now: no reader sees it.
      if (p.attached && !p.detach_pending && (cutoff === undefined || p.day >= cutoff || p.day >= today)) continue;
      if (p.attached && !p.detach_pending) {
        const carried = await this.carry(p.day, 'webhook_inbox_payloads', batch, stopped);
        result.carried += carried;
        const [{ n }]: { n: number }[] = await this.dataSource.query(OPEN_LEFT, [p.day]);
        if (n > 0) {
          result.deferred.push(p.day);
          continue;
        }
      }
      if (p.attached && !(await this.detach(session, p.name, p.detach_pending))) {
        result.deferred.push(p.day);
        continue;
      }
      // Detached: no new reader sees it. A row replayed while it was going is carried from it now;
      // one held by someone at that instant (skipped) keeps the table for the next run.
      result.carried += await this.carry(p.day, p.name, batch, () => false);
      const [{ n }]: { n: number }[] = await this.dataSource.query(OPEN_LEFT, [p.day]);
      if (n > 0) {
        result.deferred.push(p.day);
        continue;
      }
      await this.dataSource.query(`DROP TABLE IF EXISTS ${p.name}`);
      result.dropped.push(p.day);
    }
  }

  /** Deletes, row by row, settled payloads in days from today on before `cutoff` (a clock ahead of the database's only). */
  async purgeUndroppable(cutoff: string, limit: number): Promise<number> {
    const [, count]: [unknown, number] = await this.dataSource.query(PURGE_UNDROPPABLE_DAYS, [cutoff, limit]);
    return count;
  }

  /** Puts back to pending the rows an older instance quarantined for a payload it could not see. */
  async requeueOldQuarantines(): Promise<number> {
    const [, count]: [unknown, number] = await this.dataSource.query(REQUEUE_OLD_QUARANTINES);
    return count;
  }

  /** Carries the payloads of day `day`'s open rows (from `source`) to today, in batches; returns how many. */
  async carry(day: string, source = 'webhook_inbox_payloads', batch = 1000, stopped: () => boolean = () => false): Promise<number> {
    let carried = 0;
    for (let after = '0'; ;) {
      const ids = await runInTransaction(this.dataSource, async (uow) => {
        const locked: { id: string }[] = await uow.query(LOCK_OPEN_OF_DAY, [day, batch, after]);
        if (locked.length > 0) await uow.query(carryLocked(source), [day, locked.map((r) => r.id)]);
        return locked.map((r) => r.id);
      });
      carried += ids.length;
      if (ids.length < batch || stopped()) return carried;
      after = ids[ids.length - 1];
    }
  }

  /** DETACH CONCURRENTLY (or FINALIZE one interrupted), on a session of its own; false when the lock was not had in time. */
  private async detach(runner: QueryRunner, partition: string, pending: boolean): Promise<boolean> {
    try {
      await runner.query(`SET lock_timeout = '${DETACH_LOCK_TIMEOUT}'`);
      await runner.query(`ALTER TABLE webhook_inbox_payloads DETACH PARTITION ${partition} ${pending ? 'FINALIZE' : 'CONCURRENTLY'}`);
      return true;
    } catch (error) {
      // 55P03 lock_not_available: someone held the table; the next run tries again.
      if ((error as { code?: string }).code !== '55P03') throw error;
      this.logger.warn({ partition }, 'payload day not detached: lock not had in time, next run');
      return false;
    } finally {
      await runner.query('RESET lock_timeout');
    }
  }
}
