import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { PermanentError, TransientError } from '../common/errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';
import { isDeadlock, isSerializationFailure } from '../common/database-errors';
import { backoffDelayMs } from '../common/backoff';
import { processingRefusal } from './acceptance';
import { HandlerRegistry } from './handler.registry';
import { BatchTrace, InboxTraces } from './inbox.traces';
import { InboxRepository, LeaseLostError } from './inbox.repository';
import { HandlerOutcome, InboxEvent, ProviderReading, RegisteredHandler, WebhookBatchHandler } from './inbox.types';
import { WorkerFaults } from './worker-faults';
import { EventReads } from '../provider-api/event-reads';

interface Settled {
  status: 'done' | 'ignored' | 'quarantined';
  reason: string | null;
}

/** What one transaction of a batch settled, and the failures to record after it. */
interface Round {
  settled: Map<InboxEvent, Settled>;
  failures: Map<InboxEvent, unknown>;
}

function settledOf(outcome: HandlerOutcome): Settled {
  return outcome.kind === 'done' ? { status: 'done', reason: null } : { status: 'quarantined', reason: outcome.reason };
}

/** One Object.assign per log line: a spread followed by more keys costs more, once per event. */
function logFields(event: InboxEvent, more: object = {}): Record<string, unknown> {
  return Object.assign(
    { eventId: event.eventId, sourceScope: event.sourceScope, inboxId: event.id, eventType: event.eventType, attempt: event.attempts + 1 },
    more,
  );
}

/** `deferred`: handed back before any attempt (its confirm read had no answer or no budget yet). */
export type AttemptOutcome = 'done' | 'ignored' | 'retry' | 'quarantined' | 'lost_lease' | 'deferred';

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
    private readonly reads: EventReads,
    private readonly traces: InboxTraces,
  ) {}

  /** One event, one transaction. `trace`: the spans of the batch it came in (tracing on). */
  async process(event: InboxEvent, trace?: BatchTrace): Promise<AttemptOutcome> {
    const own = trace ?? this.traces.beginOne(event);
    const outcome = await this.processAlone(event, own);
    own?.settled(event, outcome);
    if (own !== trace) own?.end();
    return outcome;
  }

  private async processAlone(event: InboxEvent, trace: BatchTrace | undefined): Promise<AttemptOutcome> {
    try {
      const { status, reason } = await runInTransaction(this.dataSource, async (tx) => {
        const settled = await (trace ? trace.handler(event, () => this.apply(event, tx)) : this.apply(event, tx));
        this.repository.finishIn(tx, event.id, event.lease, settled.status, settled.reason, this.clock.now());
        return settled;
      }, { traceparents: trace?.sources() });
      this.logSettled(event, status, reason);
      return status;
    } catch (error) {
      return this.failed(event, error);
    }
  }

  /**
   * Many events in one transaction, each in its own savepoint so one failure
   * does not undo the others (events of a batch handler share one call and one
   * savepoint), completed by one fenced statement and one commit. If the batch
   * as a whole fails (a lease was lost, the connection broke), each event is
   * processed again alone and finds its own outcome.
   */
  async processBatch(events: InboxEvent[]): Promise<AttemptOutcome[]> {
    const { early, ready } = await this.confirmFirst(events);
    if (early.size === 0) return this.processConfirmed(ready);
    const outcomes = ready.length > 0 ? await this.processConfirmed(ready) : [];
    const byId = new Map(ready.map((e, i) => [e.id, outcomes[i]]));
    return events.map((e) => early.get(e) ?? byId.get(e.id)!);
  }

  /**
   * Confirm reads before the transaction takes its locks. A read's answer is the
   * handler's `confirmation` (on a copy of the event) and is stored on its row; an
   * event without one yet is handed back (`deferred`, not an attempt) or, if the read
   * failed with an answer, fails its attempt. Resolves with the outcome of each event
   * that goes no further now (`early`) and the events to process, in claim order (`ready`).
   */
  private async confirmFirst(events: InboxEvent[]): Promise<{ early: Map<InboxEvent, AttemptOutcome>; ready: InboxEvent[] }> {
    const early = new Map<InboxEvent, AttemptOutcome>();
    const planned = await this.reads.prepare(events.filter((e) => this.handlerFor(e) !== undefined));
    if (planned.size === 0) return { early, ready: events };
    const confirmations = new Map<InboxEvent, ProviderReading>();
    const lease = events[0].lease;
    const readings: { id: string; reading: ProviderReading }[] = [];
    const deferrals: { event: InboxEvent; until: Date; why: string }[] = [];
    for (const [event, outcome] of planned) {
      if (outcome.kind === 'read') {
        confirmations.set(event, outcome.reading);
        readings.push({ id: event.id, reading: outcome.reading });
      } else if (outcome.kind === 'defer') {
        deferrals.push({ event, until: outcome.until, why: outcome.why });
      } else {
        early.set(event, await this.failed(event, outcome.error));
      }
    }
    if (readings.length > 0) await this.repository.recordReadings(lease, readings);
    if (deferrals.length > 0) {
      const held = await this.repository.defer(
        lease,
        deferrals.map((d) => ({ id: d.event.id, until: d.until, why: d.why })),
      );
      for (const { event, why, until } of deferrals) {
        early.set(event, held.has(event.id) ? 'deferred' : 'lost_lease');
        this.logger.debug(logFields(event, { why, nextAttemptAt: until.toISOString() }), 'event waits for its confirm read');
      }
    }
    const ready = events.filter((e) => !early.has(e)).map((e) => (confirmations.has(e) ? { ...e, confirmation: confirmations.get(e) } : e));
    return { early, ready };
  }

  private async processConfirmed(events: InboxEvent[]): Promise<AttemptOutcome[]> {
    if (events.length === 1) return [await this.process(events[0])];
    const trace = this.traces.begin(events);
    const outcomes = await this.processTogether(events, trace);
    if (trace) {
      outcomes.forEach((outcome, i) => trace.settled(events[i], outcome));
      trace.end();
    }
    return outcomes;
  }

  private async processTogether(events: InboxEvent[], trace: BatchTrace | undefined): Promise<AttemptOutcome[]> {
    let round: Round;
    try {
      const groups = this.groups(events);
      // One batch-handler call for the whole batch needs no savepoint: if it fails, the
      // transaction rolls back and the catch below processes each event alone.
      const guarded = groups.length > 1 || !groups[0].batch;
      round = await runInTransaction(this.dataSource, async (tx) => {
        const r: Round = { settled: new Map(), failures: new Map() };
        for (const group of groups) {
          if (group.batch && (await this.applyTogether(group.batch, group.events, tx, r, guarded, trace))) continue;
          for (const event of group.events) await this.applyAlone(event, tx, r, trace);
        }
        const outcomes = [...r.settled].map(([event, { status, reason }]) => ({ id: event.id, status, reason }));
        if (outcomes.length > 0) this.repository.finishManyIn(tx, outcomes, events[0].lease, this.clock.now());
        return r;
      }, { traceparents: trace?.sources() });
    } catch (error) {
      // One at a time: a burst of single transactions would drain the pool that ingestion needs.
      this.logger.warn({ events: events.length, err: shortError(error) }, 'batch failed as a whole; processing its events one by one');
      return this.oneByOne(events, error instanceof LeaseLostError ? await this.lostOf(events) : undefined, trace);
    }
    const outcomes: AttemptOutcome[] = [];
    for (const event of events) {
      const settled = round.settled.get(event);
      const error = round.failures.get(event);
      if (settled) {
        this.logSettled(event, settled.status, settled.reason);
        outcomes.push(settled.status);
      } else if (isDeadlock(error) || isSerializationFailure(error)) {
        // Another batch held a lock this one needed: now that ours are released, try again alone, at once.
        outcomes.push(await this.process(event, trace));
      } else {
        outcomes.push(await this.failed(event, error));
      }
    }
    return outcomes;
  }

  /** The events of a batch whose lease another claim has taken; undefined if that cannot be read now. */
  private async lostOf(events: InboxEvent[]): Promise<Set<string> | undefined> {
    const held = await this.repository.stillHeld(events.map((e) => e.id), events[0].lease).catch(() => undefined);
    return held && new Set(events.filter((e) => !held.has(e.id)).map((e) => e.id));
  }

  /** Each event alone, except those another claim has taken (`lost`): they are its work now. */
  private async oneByOne(events: InboxEvent[], lost: Set<string> | undefined, trace: BatchTrace | undefined): Promise<AttemptOutcome[]> {
    const outcomes: AttemptOutcome[] = [];
    for (const event of events) outcomes.push(lost?.has(event.id) ? 'lost_lease' : await this.process(event, trace));
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

  private async applyAlone(event: InboxEvent, tx: UnitOfWork, round: Round, trace: BatchTrace | undefined): Promise<void> {
    await tx.query('SAVEPOINT inbox_event');
    try {
      const settled = await (trace ? trace.handler(event, () => this.apply(event, tx)) : this.apply(event, tx));
      // Writes a handler sent without waiting succeed or fail with the event, inside its savepoint.
      await tx.settle();
      await tx.query('RELEASE SAVEPOINT inbox_event');
      round.settled.set(event, settled);
    } catch (error) {
      await tx.settle().catch(() => undefined);
      await tx.query('ROLLBACK TO SAVEPOINT inbox_event');
      round.failures.set(event, error);
    }
  }

  /**
   * One batch call in one savepoint; false (rolled back, nothing recorded) when the
   * call itself failed. Unguarded (no savepoint), a failed call fails the transaction.
   */
  private async applyTogether(
    batch: WebhookBatchHandler,
    events: InboxEvent[],
    tx: UnitOfWork,
    round: Round,
    guarded: boolean,
    trace: BatchTrace | undefined,
  ): Promise<boolean> {
    if (guarded) await tx.query('SAVEPOINT inbox_batch');
    try {
      const results = await (trace ? trace.together(events, () => batch(events, tx)) : batch(events, tx));
      const settled = new Map<InboxEvent, Settled>();
      for (const [i, event] of events.entries()) {
        const result = results[i];
        if (result instanceof Error) continue;
        await this.faults.beforeComplete(event, tx);
        settled.set(event, settledOf(result));
      }
      if (guarded) {
        await tx.settle();
        await tx.query('RELEASE SAVEPOINT inbox_batch');
      }
      for (const [i, event] of events.entries()) {
        const result = results[i];
        if (result instanceof Error) round.failures.set(event, result);
        else round.settled.set(event, settled.get(event)!);
      }
      return true;
    } catch (error) {
      if (!guarded) throw error;
      await tx.settle().catch(() => undefined);
      await tx.query('ROLLBACK TO SAVEPOINT inbox_batch');
      return false;
    }
  }

  /** True when a batch handler takes every one of `events`: then a batch costs the round trips of one event. */
  handledTogether(events: InboxEvent[]): boolean {
    return events.every((event) => this.handlerFor(event)?.batch !== undefined);
  }

  /** The handler that will run for `event`, or undefined when `apply` settles it without one. */
  private handlerFor(event: InboxEvent): RegisteredHandler | undefined {
    if (processingRefusal(this.config.endpoints, event)) return undefined;
    if (event.attempts >= this.config.worker.maxAttempts || event.unreadable || event.payload == null) return undefined;
    return this.handlers.find(event.provider, event.eventType);
  }

  /** The event's work inside `tx`; throws to retry (TransientError) or quarantine (PermanentError). */
  private async apply(event: InboxEvent, tx: UnitOfWork): Promise<Settled> {
    // The acceptance decision again, on the current configuration: however the row became pending
    // (a replay, an older version, a hand-written UPDATE), what its endpoint refuses reaches no handler.
    const refusal = processingRefusal(this.config.endpoints, event);
    if (refusal) return { status: 'ignored', reason: refusal };
    // Only a reclaimed lease gets here at the limit: its workers kept dying on it.
    if (event.attempts >= this.config.worker.maxAttempts) return { status: 'quarantined', reason: 'max_attempts' };
    if (event.unreadable?.reason === 'payload_key_unknown') {
      // Another instance may hold a newer key ring (a rotation rolling out): retry, quarantine at the limit.
      throw new TransientError(event.unreadable.message);
    }
    // Altered, or moved from another row: never hand garbage to a handler.
    if (event.unreadable) return { status: 'quarantined', reason: event.unreadable.reason };
    if (event.payload == null) return { status: 'quarantined', reason: 'payload_missing' };
    const handler = this.handlers.find(event.provider, event.eventType);
    if (!handler) return { status: 'ignored', reason: 'no_handler' };
    const outcome = await handler.handle(event, tx);
    await this.faults.beforeComplete(event, tx);
    return settledOf(outcome);
  }

  private logSettled(event: InboxEvent, status: Settled['status'], reason: string | null): void {
    if (reason) this.logger.warn(logFields(event, { reason }), `event ${status}`);
    else this.logger.debug(logFields(event, { status }), 'event processed');
  }

  private failed(event: InboxEvent, error: unknown): Promise<AttemptOutcome> {
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
    const attempt = event.attempts + 1;
    const next = new Date(now.getTime() + backoffDelayMs(attempt, this.config.retry));
    const result = await this.repository.recordFailure(
      event.id,
      event.lease,
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
