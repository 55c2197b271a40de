import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { runInTransaction } from '../database/unit-of-work';

/** How long an instance trusts what it read of webhook_inbox_time_keys. */
const REFRESH_MS = 10_000;
/**
 * How far ahead of the switch (the database's clock) time keys start. No event stated from
 * `keyed_from` on may have been written under the old key, and a row written before the
 * switch has the time its sender stated, by the sender's clock: an event stated minutes ahead
 * of the database's clock and accepted just before the switch would otherwise be NULL-keyed,
 * and its resend keyed by time, accepted twice. A day covers a sender's clock that far ahead
 * as well as an instance's late read of the switch (REFRESH_MS); it only delays by a day the
 * index's gain.
 */
export const TIME_KEYS_LEAD_MS = 24 * 60 * 60_000;
/** The old constraint's drop waits at most this long for its lock, then the switch tries again. */
const DROP_LOCK_TIMEOUT = '2s';
const DROP_ATTEMPTS = 15;

/** 42P10: ON CONFLICT names columns no unique index matches (the old constraint was dropped). */
export function isConflictTargetGone(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '42P10';
}

export interface TimeKeysSwitch {
  keyedFrom: string;
  switchedAt: string;
  /** False when the old constraint's lock was not granted in time: call the switch again later. */
  oldConstraintDropped: boolean;
}

export interface IdentityKeyMode {
  /** Events stated from this time on (ms, -Infinity on a new install) are keyed by it; undefined: the inbox still keys by id alone. */
  keyedFromMs?: number;
  /** Whether the old unique constraint on (source_scope, event_id) is still there (the accept's conflict target). */
  oldConstraint: boolean;
}

/**
 * Which identity key the inbox writes: (identity_at, source_scope, event_id), identity_at being
 * the sender's stated time of the event (VerifiedEvent.occurredAt) for events stated from the
 * switch on, and NULL otherwise (the index is NULLS NOT DISTINCT, so NULL keys compare by id).
 * The switch is the contract step of migration 1765650000000 (its comment tells the whole story).
 */
@Injectable()
export class IdentityKeys {
  private mode?: IdentityKeyMode;
  /** When the mode was read, on the monotonic clock: a wall clock stepped back would keep it for as long. */
  private readAt = 0;
  private reading?: Promise<IdentityKeyMode>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  async current(): Promise<IdentityKeyMode> {
    if (this.mode && performance.now() - this.readAt < REFRESH_MS) return this.mode;
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    return this.reading;
  }

  /** Read again before the next use (an accept found the old constraint gone). */
  forget(): void {
    this.mode = undefined;
  }

  /** The identity_at an event stated at `occurredAt` is stored under. */
  static keyOf(mode: IdentityKeyMode, occurredAt: Date | undefined): Date | null {
    return mode.keyedFromMs !== undefined && occurredAt && occurredAt.getTime() >= mode.keyedFromMs ? occurredAt : null;
  }

  /**
   * The contract step: keys by time from TIME_KEYS_LEAD_MS ahead, then drops the old constraint
   * (a short ACCESS EXCLUSIVE lock, taken with a lock timeout and retried). Only once no instance
   * of a version before this one runs: such an instance would still write id-only keys. Again
   * after a switch: finishes a drop that did not get its lock, and changes nothing else.
   */
  async switchToTime(who: Actor, reason: string): Promise<TimeKeysSwitch> {
    const row = await runInTransaction(this.dataSource, async (tx) => {
      const [switched]: { keyed_from: string; switched_at: Date }[] = await tx.query(
        `INSERT INTO webhook_inbox_time_keys (keyed_from) VALUES (now() + $1 * interval '1 millisecond')
         ON CONFLICT (singleton) DO UPDATE SET keyed_from = webhook_inbox_time_keys.keyed_from
         RETURNING to_json(keyed_from) #>> '{}' AS keyed_from, switched_at`,
        [TIME_KEYS_LEAD_MS],
      );
      await this.audit.record(tx, who, {
        action: 'inbox.time_keys',
        target: 'inbox:identity',
        reason,
        details: { keyedFrom: switched.keyed_from },
      });
      return switched;
    });
    let dropped = false;
    for (let attempt = 1; !dropped && attempt <= DROP_ATTEMPTS; attempt++) {
      try {
        await this.dataSource.transaction(async (m) => {
          await m.query(`SET LOCAL lock_timeout = '${DROP_LOCK_TIMEOUT}'`);
          await m.query(`ALTER TABLE webhook_inbox DROP CONSTRAINT IF EXISTS webhook_inbox_identity`);
        });
        dropped = true;
      } catch (error) {
        if ((error as { code?: unknown }).code !== '55P03') throw error;
      }
    }
    this.forget();
    return { keyedFrom: row.keyed_from, switchedAt: row.switched_at.toISOString(), oldConstraintDropped: dropped };
  }

  private async read(): Promise<IdentityKeyMode> {
    // As epoch milliseconds in float8: -infinity reads as -Infinity, where pg's Date would be NaN.
    const [row]: { keyed_from_ms: number | null; old_constraint: boolean }[] = await this.dataSource.query(
      `SELECT (SELECT extract(epoch FROM keyed_from)::float8 * 1000 FROM webhook_inbox_time_keys) AS keyed_from_ms,
              EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'webhook_inbox_identity'
                         AND conrelid = 'webhook_inbox'::regclass) AS old_constraint`,
    );
    this.mode = { keyedFromMs: row.keyed_from_ms ?? undefined, oldConstraint: row.old_constraint };
    this.readAt = performance.now();
    return this.mode;
  }
}
