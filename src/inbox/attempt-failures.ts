import { Inject, Injectable, Logger } from '@nestjs/common';
import { backoffDelayMs, waitDelayMs } from '../common/backoff';
import { Clock } from '../common/clock';
import { PermanentError, WaitingError } from '../common/errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { InboxRepository, LeaseLostError } from './inbox.repository';
import { InboxEvent } from './inbox.types';

/**
 * `deferred`: handed back before any attempt (its confirm read had no answer or no budget yet);
 * `waiting`: handed back without counting the attempt (a WaitingError within its wait).
 */
export type AttemptOutcome = 'done' | 'ignored' | 'retry' | 'quarantined' | 'lost_lease' | 'deferred' | 'waiting';

/** Whether `error` hands `event` back without counting an attempt: it is early, and not yet waited long enough. */
export function waitsWithoutAttempt(error: unknown, event: InboxEvent, now: Date, waitMs: number): boolean {
  return error instanceof WaitingError && now.getTime() - event.receivedAt.getTime() < waitMs;
}

/** One Object.assign per log line: a spread followed by more keys costs more, once per event. */
export function logFields(event: InboxEvent, more: object = {}): Record<string, unknown> {
  return Object.assign(
    { eventId: event.eventId, sourceScope: event.sourceScope, inboxId: event.id, eventType: event.eventType, attempt: event.attempts + 1 },
    more,
  );
}

/**
 * The worker's failure recorder: what a failed attempt leaves on its row, after its
 * transaction rolled back, in a statement of its own fenced by the lease.
 */
@Injectable()
export class AttemptFailures {
  private readonly logger = new Logger(AttemptFailures.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: InboxRepository,
    private readonly clock: Clock,
  ) {}

  /** Records a failed attempt (never throws): retry with backoff, quarantine, or nothing when the lease is lost. */
  record(event: InboxEvent, error: unknown): Promise<AttemptOutcome> {
    const log = logFields(event);
    return this.recordFailure(event, error, log).catch((e: Error) => {
      // The lease expires and another attempt follows: nothing is lost.
      this.logger.error({ ...log, err: e.message }, 'could not record the failure');
      return 'retry' as const;
    });
  }

  private async recordFailure(event: InboxEvent, error: unknown, log: Record<string, unknown>): Promise<AttemptOutcome> {
    const now = this.clock.now();
    if (error instanceof LeaseLostError) {
      this.logger.warn(log, 'lease lost before completion: rolled back, the new owner processes the event');
      return 'lost_lease';
    }
    if (error instanceof PermanentError) {
      const ok = await this.repository.finish(event.id, event.lease, 'quarantined', error.reason, now);
      this.logger.warn({ ...log, reason: error.reason }, 'event quarantined');
      return ok ? 'quarantined' : 'lost_lease';
    }
    const message = shortError(error);
    if (waitsWithoutAttempt(error, event, now, this.config.worker.waitMs)) {
      // Counting these would quarantine a refund minutes after it overtook its payment, which the
      // sender may deliver days later: the attempt limit is for failures, not for early events.
      const until = new Date(now.getTime() + waitDelayMs(now.getTime() - event.receivedAt.getTime(), this.config.retry));
      const held = await this.repository.defer(event.lease, [{ id: event.id, until, why: message }], true);
      if (!held.has(event.id)) return 'lost_lease';
      this.logger.log({ ...log, err: message, nextAttemptAt: until.toISOString() }, 'event is early: waits, no attempt counted');
      return 'waiting';
    }
    const attempt = event.attempts + 1;
    const next = new Date(now.getTime() + backoffDelayMs(attempt, this.config.retry));
    const result = await this.repository.recordFailure(event.id, event.lease, message, next, this.config.worker.maxAttempts, now);
    if (!result) {
      this.logger.warn({ ...log, err: message }, 'attempt failed after the lease was lost');
      return 'lost_lease';
    }
    if (result.status === 'quarantined') {
      this.logger.warn({ ...log, err: message }, 'event quarantined: attempts exhausted');
      return 'quarantined';
    }
    this.logger.log({ ...log, err: message, nextAttemptAt: next.toISOString() }, 'attempt failed, retry scheduled');
    return 'retry';
  }
}

/**
 * Name and message only: never a payload, and short enough for a column and a log line. Never
 * throws (a thrown value String() cannot convert is named by its type) and holds no NUL, which a
 * text column refuses: the failure must be recordable whatever a handler threw.
 */
export function shortError(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error ? `${error.name}: ${error.message}` : `Error: ${String(error)}`;
  } catch {
    text = `Error: a thrown ${typeof error} that has no text`;
  }
  return text.replace(/\u0000/g, '').slice(0, 300);
}
