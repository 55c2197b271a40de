import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock';
import { PermanentError } from '../common/errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { transactionWithAfterCommit } from '../database/after-commit';
import { isDeadlock, isSerializationFailure } from '../database/database-errors';
import { backoffDelayMs } from '../common/backoff';
import { ClaimJournal } from './claim-journal';
import { HandlerRegistry } from './handler.registry';
import { WORKER_LOST } from './inbox.queries';
import { ClaimOutcome, InboxRepository } from './inbox.repository';
import { HandlerOutcome, InboxEvent, InboxStatus, RegisteredHandler, WebhookBatchHandler } from './inbox.types';
import { WorkerFaults } from './worker-faults';

interface Settled {
  status: 'done' | 'ignored' | 'quarantined';
  reason: string | null;
}

/** What one transaction decided: events settled, and events whose attempt failed (rolled back to their savepoint). */
interface Round {
  settled: Map<InboxEvent, Settled>;
  failures: Map<InboxEvent, unknown>;
}

function settledOf(outcome: HandlerOutcome): Settled {
  return outcome.kind === 'done' ? { status: 'done', reason: null } : { status: 'quarantined', reason: outcome.reason };
}

function logFields(event: InboxEvent) {
  return {
    eventId: event.eventId,
    sourceScope: event.sourceScope,
    inboxId: event.id,
    eventType: event.eventType,
    attempt: event.attempts + 1,
  };
}

/** `lost`: the attempt's transaction ended without an outcome; recovery counts it. */
export type AttemptOutcome = 'done' | 'ignored' | 'retry' | 'quarantined' | 'lost';

export interface ClaimResult {
  /** The events this claim locked, in claim order. */
  events: InboxEvent[];
  /** One per event, in the same order. */
  outcomes: AttemptOutcome[];
}

const NOTHING: ClaimResult = { events: [], outcomes: [] };

/** A random advisory lock key for one claim (a signed 64-bit integer). */
function lockKey(): string {
  return randomBytes(8).readBigInt64BE().toString();
}

/**
 * Claims events and processes them in one transaction. The claim is the row
 * lock of that transaction: nothing is written to take an event, and the event
 * is free again the moment its transaction ends, however it ends. The lease is
 * PostgreSQL's: a transaction left idle longer than WORKER_LEASE_MS (its
 * worker stalled or vanished) is ended by the server, so a stalled worker can
 * never complete an event another worker has since taken. The claim's journal
 * row (ClaimJournal) is what survives a worker's death, so that recovery can
 * count that attempt.
 */
@Injectable()
export class InboxEventProcessor {
  /** Names this instance in the claim journal and the logs. */
  readonly workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly logger = new Logger(InboxEventProcessor.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly repository: InboxRepository,
    private readonly journal: ClaimJournal,
    private readonly handlers: HandlerRegistry,
    private readonly clock: Clock,
    private readonly faults: WorkerFaults,
  ) {}

  /**
   * Claims up to `limit` due events and processes them in one transaction;
   * `onClaimed` hears how many were claimed as soon as the claim returns.
   */
  processDue(limit: number, onClaimed: (count: number) => void = () => undefined): Promise<ClaimResult> {
    return this.processClaim((tx) => this.repository.claimDue(tx, this.clock.now(), limit), onClaimed);
  }

  /**
   * Counts and frees the attempts that ended without an outcome (their worker
   * died, or the server ended their transaction); quarantines at the limit.
   */
  async recoverLostAttempts(): Promise<number> {
    const recovered = await this.repository.recoverLostAttempts(this.config.worker.maxAttempts, this.clock.now());
    for (const r of recovered) {
      const log = { eventId: r.eventId, sourceScope: r.sourceScope, inboxId: r.id, attempts: r.attempts };
      if (r.status === 'quarantined') this.logger.warn(log, 'event quarantined: its attempts kept ending without an outcome');
      else this.logger.warn(log, 'an attempt ended without an outcome: counted, the event is due again');
    }
    return recovered.length;
  }

  /**
   * One transaction: claim, journal the claim, apply each event in its own
   * savepoint (the events of one batch handler share one call and one
   * savepoint) so one failure does not undo the others, then write every
   * outcome, failed attempts included, in one statement and one commit.
   */
  private async processClaim(
    claim: (tx: EntityManager) => Promise<InboxEvent[]>,
    onClaimed: (count: number) => void,
    alone = false,
  ): Promise<ClaimResult> {
    const key = lockKey();
    let events: InboxEvent[] = [];
    let journaled = false;
    let aside: InboxEvent[] = [];
    let told = false;
    const tell = (count: number) => {
      if (!told) onClaimed(count);
      told = true;
    };
    let result: { round: Round; statuses: Map<string, { status: InboxStatus }> } | undefined;
    try {
      result = await transactionWithAfterCommit(this.dataSource, async (tx) => {
        await this.repository.openClaim(tx, key, this.config.worker.leaseMs);
        events = await claim(tx);
        tell(events.length);
        if (events.length === 0) return undefined;
        await this.journal.record(key, this.workerId, events.map((e) => e.id));
        journaled = true;
        // An event whose last attempt died with its worker may be what killed it: it goes alone, after this batch.
        if (!alone) aside = events.filter((e) => e.lastError === WORKER_LOST && events.length > 1);
        const round = await this.applyAll(
          events.filter((e) => !aside.includes(e)),
          tx,
        );
        const statuses = await this.repository.completeClaim(tx, key, this.outcomesOf(round), this.config.worker.maxAttempts, this.clock.now());
        return { round, statuses };
      });
    } catch (error) {
      tell(0);
      return this.transactionLost(events, journaled, key, error);
    }
    if (!result) return NOTHING;

    const outcomes = new Map<InboxEvent, AttemptOutcome>();
    const again: InboxEvent[] = [...aside];
    for (const event of events) {
      if (aside.includes(event)) continue;
      const settled = result.round.settled.get(event);
      const error = result.round.failures.get(event);
      if (settled) {
        this.logSettled(event, settled.status, settled.reason);
        outcomes.set(event, settled.status);
      } else if (isDeadlock(error) || isSerializationFailure(error)) {
        // Another transaction held a lock this one needed: now that ours are released, try again alone, at once.
        again.push(event);
      } else {
        outcomes.set(event, this.logFailure(event, error, result.statuses.get(event.id)?.status));
      }
    }
    for (const event of again) outcomes.set(event, await this.processAlone(event));
    return { events, outcomes: events.map((e) => outcomes.get(e)!) };
  }

  /** Claims `event` again, if still pending and free, and processes it in a transaction of its own. */
  private async processAlone(event: InboxEvent): Promise<AttemptOutcome> {
    const { outcomes } = await this.processClaim((tx) => this.repository.claimIds(tx, [event.id]), () => undefined, true);
    // Empty: another worker holds or finished it.
    return outcomes[0] ?? 'lost';
  }

  /**
   * The transaction failed as a whole (the connection broke, the server ended
   * it, the commit failed). Nothing of it stands. A batch's events are each
   * processed again alone, so that one bad event cannot take the others down
   * with it; a single event's journal row stays, for recovery to count.
   */
  private async transactionLost(events: InboxEvent[], journaled: boolean, key: string, error: unknown): Promise<ClaimResult> {
    if (!journaled) {
      if (events.length === 0) this.logger.error({ err: shortError(error) }, 'claim failed');
      return NOTHING;
    }
    if (events.length === 1) {
      this.logger.warn({ ...logFields(events[0]), err: shortError(error) }, 'attempt lost with its transaction; recovery counts it');
      return { events, outcomes: ['lost'] };
    }
    this.logger.warn({ events: events.length, err: shortError(error) }, 'batch transaction lost as a whole; processing its events one by one');
    // Each event's own transaction counts its own attempt; if this fails too, recovery counts the batch's.
    await this.journal.forget(key).catch(() => undefined);
    const outcomes: AttemptOutcome[] = [];
    // One at a time: a burst of single transactions would drain the pool that ingestion needs.
    for (const event of events) outcomes.push(await this.processAlone(event));
    return { events, outcomes };
  }

  private async applyAll(events: InboxEvent[], tx: EntityManager): Promise<Round> {
    const round: Round = { settled: new Map(), failures: new Map() };
    for (const group of this.groups(events)) {
      if (group.batch && (await this.applyTogether(group.batch, group.events, tx, round))) continue;
      for (const event of group.events) await this.applyAlone(event, tx, round);
    }
    return round;
  }

  /** Settled events get their status; failed ones a retry time (or quarantine when the handler says permanent). */
  private outcomesOf(round: Round): ClaimOutcome[] {
    const now = this.clock.now();
    const outcomes: ClaimOutcome[] = [...round.settled].map(([event, { status, reason }]) => ({ id: event.id, status, reason }));
    for (const [event, error] of round.failures) {
      if (isDeadlock(error) || isSerializationFailure(error)) continue;
      if (error instanceof PermanentError) {
        outcomes.push({ id: event.id, status: 'quarantined', reason: error.reason });
        continue;
      }
      const nextAttemptAt = new Date(now.getTime() + backoffDelayMs(event.attempts + 1, this.config.retry));
      outcomes.push({ id: event.id, status: null, error: shortError(error), nextAttemptAt });
    }
    return outcomes;
  }

  /** Claim order kept; the events of one batch handler gathered into one group, every other event alone. */
  private groups(events: InboxEvent[]): { batch?: WebhookBatchHandler; events: InboxEvent[] }[] {
    const groups: { batch?: WebhookBatchHandler; events: InboxEvent[] }[] = [];
    const byHandler = new Map<string, { batch: WebhookBatchHandler; events: InboxEvent[] }>();
    for (const event of events) {
      const handler = this.handlerFor(event);
      if (!handler?.batch) {
        groups.push({ events: [event] });
        continue;
      }
      let group = byHandler.get(handler.id);
      if (!group) {
        group = { batch: handler.batch, events: [] };
        byHandler.set(handler.id, group);
        groups.push(group);
      }
      group.events.push(event);
    }
    return groups;
  }

  private async applyAlone(event: InboxEvent, tx: EntityManager, round: Round): Promise<void> {
    await tx.query('SAVEPOINT inbox_event');
    try {
      round.settled.set(event, await this.apply(event, tx));
      await tx.query('RELEASE SAVEPOINT inbox_event');
    } catch (error) {
      await tx.query('ROLLBACK TO SAVEPOINT inbox_event');
      round.failures.set(event, error);
    }
  }

  /** One batch call in one savepoint; false (rolled back, nothing recorded) when the call itself failed. */
  private async applyTogether(batch: WebhookBatchHandler, events: InboxEvent[], tx: EntityManager, round: Round): Promise<boolean> {
    await tx.query('SAVEPOINT inbox_batch');
    try {
      const results = await batch(events, tx);
      const settled = new Map<InboxEvent, Settled>();
      for (const [i, event] of events.entries()) {
        const result = results[i];
        if (result instanceof Error) continue;
        await this.faults.beforeComplete(event, tx);
        settled.set(event, settledOf(result));
      }
      await tx.query('RELEASE SAVEPOINT inbox_batch');
      for (const [i, event] of events.entries()) {
        const result = results[i];
        if (result instanceof Error) round.failures.set(event, result);
        else round.settled.set(event, settled.get(event)!);
      }
      return true;
    } catch {
      await tx.query('ROLLBACK TO SAVEPOINT inbox_batch');
      return false;
    }
  }

  /** The handler that will run for `event`, or undefined when `apply` settles it without one. */
  private handlerFor(event: InboxEvent): RegisteredHandler | undefined {
    if (event.attempts >= this.config.worker.maxAttempts || event.payload == null) return undefined;
    return this.handlers.find(event.provider, event.eventType);
  }

  /** The event's work inside `tx`; throws to retry (TransientError) or quarantine (PermanentError). */
  private async apply(event: InboxEvent, tx: EntityManager): Promise<Settled> {
    // Only reached at the limit if the attempts were counted elsewhere (an admin change, an older version).
    if (event.attempts >= this.config.worker.maxAttempts) return { status: 'quarantined', reason: 'max_attempts' };
    if (event.payload == null) return { status: 'quarantined', reason: 'payload_missing' };
    const handler = this.handlers.find(event.provider, event.eventType);
    if (!handler) return { status: 'ignored', reason: 'no_handler' };
    const outcome = await handler.handle(event, tx);
    await this.faults.beforeComplete(event, tx);
    return settledOf(outcome);
  }

  private logSettled(event: InboxEvent, status: Settled['status'], reason: string | null): void {
    if (reason) this.logger.warn({ ...logFields(event), reason }, `event ${status}`);
    else this.logger.debug({ ...logFields(event), status }, 'event processed');
  }

  private logFailure(event: InboxEvent, error: unknown, status: InboxStatus | undefined): AttemptOutcome {
    const log = logFields(event);
    if (error instanceof PermanentError) {
      this.logger.warn({ ...log, reason: error.reason }, 'event quarantined');
      return 'quarantined';
    }
    if (status === 'quarantined') {
      this.logger.warn({ ...log, err: shortError(error) }, 'event quarantined: attempts exhausted');
      return 'quarantined';
    }
    this.logger.log({ ...log, err: shortError(error) }, 'attempt failed, retry scheduled');
    return 'retry';
  }
}

/** Name and message only: never a payload, and short enough for a column and a log line. */
function shortError(error: unknown): string {
  const e = error instanceof Error ? error : new Error(String(error));
  return `${e.name}: ${e.message}`.slice(0, 300);
}
