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

/** The fenced completion matched nothing: another worker owns the event now. */
class LeaseLostError extends Error {
  constructor() {
    super('lease_lost');
  }
}

export type AttemptOutcome = 'done' | 'ignored' | 'retry' | 'quarantined' | 'lost_lease';

/**
 * Processes one claimed event in one transaction: the handler's writes and the
 * fenced completion commit together or not at all. A failure is recorded
 * afterwards in a separate, also fenced, statement.
 */
@Injectable()
export class InboxEventProcessor {
  /** Identifies this instance's leases. */
  readonly workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly logger = new Logger(InboxEventProcessor.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly repository: InboxRepository,
    private readonly handlers: HandlerRegistry,
    private readonly clock: Clock,
    private readonly faults: WorkerFaults,
  ) {}

  async process(event: InboxEvent): Promise<AttemptOutcome> {
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
      return status;
    } catch (error) {
      return this.recordFailure(event, error, log).catch((e: Error) => {
        // The lease expires and another attempt follows: nothing is lost.
        this.logger.error({ ...log, err: e.message }, 'could not record the failure');
        return 'retry' as const;
      });
    }
  }

  private async recordFailure(event: InboxEvent, error: unknown, log: Record<string, unknown>): Promise<AttemptOutcome> {
    const now = this.clock.now();
    if (error instanceof LeaseLostError) {
      this.logger.warn(log, 'lease lost before completion: rolled back, the new owner processes the event');
      return 'lost_lease';
    }
    if (error instanceof PermanentError) {
      const ok = await this.repository.finish(this.dataSource.manager, event.id, this.workerId, 'quarantined', error.reason, now);
      this.logger.warn({ ...log, reason: error.reason }, 'event quarantined');
      return ok ? 'quarantined' : 'lost_lease';
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

/** Name and message only: never a payload, and short enough for a column and a log line. */
function shortError(error: unknown): string {
  const e = error instanceof Error ? error : new Error(String(error));
  return `${e.name}: ${e.message}`.slice(0, 300);
}
