import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { PermanentError } from '../common/errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { transactionWithAfterCommit } from '../database/after-commit';
import { backoffDelayMs } from './backoff';
import { HandlerRegistry } from './handler.registry';
import { InboxRepository } from './inbox.repository';
import { InboxEvent } from './inbox.types';
import { WorkerFaults } from './worker-faults';

/** Events claimed per round trip; small enough that a batch finishes well inside a lease. */
export const CLAIM_BATCH = 32;

/** The fenced completion matched nothing: another worker owns the event now. */
class LeaseLostError extends Error {
  constructor() {
    super('lease_lost');
  }
}

/**
 * Turns pending inbox rows into business effects. Each event is processed in
 * one transaction: the handler's writes and the fenced completion commit
 * together or not at all. Failures are recorded in a separate transaction.
 */
@Injectable()
export class InboxWorker {
  /** Identifies this instance's leases. */
  readonly workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly logger = new Logger(InboxWorker.name);
  private readonly concurrency: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly repository: InboxRepository,
    private readonly handlers: HandlerRegistry,
    private readonly clock: Clock,
    private readonly faults: WorkerFaults,
  ) {
    // Each event holds one pooled connection; leave room for claims and the API.
    this.concurrency = Math.max(1, Math.min(8, config.databasePoolSize - 2));
  }

  /** Claims one batch and processes it; resolves with the number of events claimed. */
  async runOnce(): Promise<number> {
    const events = await this.repository.claim(this.workerId, this.clock.now(), CLAIM_BATCH, this.config.worker.leaseMs);
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < events.length) await this.process(events[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, events.length) }, lane));
    return events.length;
  }

  private async process(event: InboxEvent): Promise<void> {
    const log = {
      eventId: event.eventId,
      sourceScope: event.sourceScope,
      inboxId: event.id,
      eventType: event.eventType,
      attempt: event.attempts + 1,
    };
    try {
      const status = await transactionWithAfterCommit(this.dataSource, async (tx) => {
        let status: 'done' | 'ignored' | 'quarantined';
        let reason: string | null = null;
        const handler = this.handlers.find(event.provider, event.eventType);
        if (event.attempts >= this.config.worker.maxAttempts) {
          // Only a reclaimed lease gets here: its workers kept dying on it.
          [status, reason] = ['quarantined', 'max_attempts'];
        } else if (event.payload == null) {
          [status, reason] = ['quarantined', 'payload_missing'];
        } else if (!handler) {
          [status, reason] = ['ignored', 'no_handler'];
        } else {
          const outcome = await handler(event, tx);
          await this.faults.beforeComplete(event, tx);
          if (outcome.kind === 'done') status = 'done';
          else [status, reason] = ['quarantined', outcome.reason];
        }
        if (!(await this.repository.finish(tx, event.id, this.workerId, status, reason, this.clock.now()))) {
          throw new LeaseLostError();
        }
        if (reason) this.logger.warn({ ...log, reason }, `event ${status}`);
        return status;
      });
      this.logger.debug({ ...log, status }, 'event processed');
    } catch (error) {
      await this.recordFailure(event, error, log).catch((e: Error) => {
        // The lease expires and another attempt follows: nothing is lost.
        this.logger.error({ ...log, err: e.message }, 'could not record the failure');
      });
    }
  }

  private async recordFailure(event: InboxEvent, error: unknown, log: Record<string, unknown>): Promise<void> {
    const now = this.clock.now();
    if (error instanceof LeaseLostError) {
      this.logger.warn(log, 'lease lost before completion: rolled back, the new owner processes the event');
      return;
    }
    if (error instanceof PermanentError) {
      const ok = await this.repository.finish(this.dataSource.manager, event.id, this.workerId, 'quarantined', error.reason, now);
      this.logger.warn({ ...log, reason: error.reason, fenced: !ok }, 'event quarantined');
      return;
    }
    const message = shortError(error);
    const attempt = event.attempts + 1;
    const next = new Date(now.getTime() + backoffDelayMs(attempt, this.config.retry));
    const result = await this.repository.recordFailure(
      event.id,
      this.workerId,
      message,
      next,
      this.config.worker.maxAttempts,
      now,
    );
    if (!result) this.logger.warn({ ...log, err: message }, 'attempt failed after the lease was lost');
    else if (result.status === 'quarantined') this.logger.warn({ ...log, err: message }, 'event quarantined: attempts exhausted');
    else this.logger.log({ ...log, err: message, nextAttemptAt: next.toISOString() }, 'attempt failed, retry scheduled');
  }
}

/** Name and message only: never a payload, and short enough for a column and a log line. */
function shortError(error: unknown): string {
  const e = error instanceof Error ? error : new Error(String(error));
  return `${e.name}: ${e.message}`.slice(0, 300);
}
