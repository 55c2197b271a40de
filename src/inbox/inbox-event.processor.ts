import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { PermanentError, TransientError } from '../common/errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';
import { isDeadlock, isSerializationFailure, isTimeoutOfWait } from '../common/database-errors';
import { processingRefusal } from './acceptance';
import { HandlerRegistry } from './handler.registry';
import { BatchTrace, InboxTraces } from './inbox.traces';
import { InboxRepository, LeaseLostError } from './inbox.repository';
import { HandlerOutcome, InboxEvent, RegisteredHandler, WebhookBatchHandler } from './inbox.types';
import { WorkerFaults } from './worker-faults';
import { AttemptFailures, AttemptOutcome, logFields, shortError, waitsWithoutAttempt } from './attempt-failures';
import { PreviewOutcome } from './inbox.types';
import { ConfirmStep } from './confirm-step';

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

export type { AttemptOutcome } from './attempt-failures';

/**
 * The worker's batch executor: runs claimed events' handlers in one transaction (or
 * one each), each in its savepoint; the handlers' writes and the fenced completion
 * commit together or not at all. Before it, the confirm step (confirm-step.ts); after
 * a failure, the failure recorder (attempt-failures.ts), in a statement of its own.
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
    private readonly traces: InboxTraces,
    private readonly confirm: ConfirmStep,
    private readonly failures: AttemptFailures,
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
      const { status, reason } = await runInTransaction(
        this.dataSource,
        async (tx) => {
          const settled = await (trace ? trace.handler(event, () => this.apply(event, tx)) : this.apply(event, tx));
          this.repository.finishIn(tx, event.id, event.lease, settled.status, settled.reason, this.clock.now());
          return settled;
        },
        { traceparents: trace?.sources() },
      );
      this.logSettled(event, status, reason);
      return status;
    } catch (error) {
      return this.failures.record(event, error);
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
    const { early, ready } = await this.confirm.run(events, (e) => this.handlerFor(e) !== undefined);
    if (early.size === 0) return this.processConfirmed(ready);
    const outcomes = ready.length > 0 ? await this.processConfirmed(ready) : [];
    const byId = new Map(ready.map((e, i) => [e.id, outcomes[i]]));
    return events.map((e) => early.get(e) ?? byId.get(e.id)!);
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
      round = await runInTransaction(
        this.dataSource,
        async (tx) => {
          const r: Round = { settled: new Map(), failures: new Map() };
          for (const group of groups) {
            if (group.batch && (await this.applyTogether(group.batch, group.events, tx, r, guarded, trace))) continue;
            for (const event of group.events) await this.applyAlone(event, tx, r, trace);
          }
          const outcomes = [...r.settled].map(([event, { status, reason }]) => ({ id: event.id, status, reason }));
          if (outcomes.length > 0) this.repository.finishManyIn(tx, outcomes, events[0].lease, this.clock.now());
          return r;
        },
        { traceparents: trace?.sources() },
      );
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
        outcomes.push(await this.failures.record(event, error));
      }
    }
    return outcomes;
  }

  /** The events of a batch whose lease another claim has taken; undefined if that cannot be read now. */
  private async lostOf(events: InboxEvent[]): Promise<Set<string> | undefined> {
    const held = await this.repository
      .stillHeld(
        events.map((e) => e.id),
        events[0].lease,
      )
      .catch(() => undefined);
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

  /**
   * The effect preview's step (EffectPreviewService): `event`'s work in `tx` as the worker's
   * would run it, inside a savepoint, without the fenced completion. Its writes stay in `tx` for
   * the caller to read before rolling the whole transaction back. A failure is the outcome the
   * worker would record (`retry`, or `quarantined` for a PermanentError or the last attempt),
   * its writes undone; a lock or statement timeout is thrown (the preview could not see).
   */
  async preview(event: InboxEvent, tx: UnitOfWork): Promise<PreviewOutcome> {
    await tx.query('SAVEPOINT effect_preview');
    try {
      const settled = await this.apply(event, tx);
      await tx.settle();
      return { status: settled.status, reason: settled.reason, handler: this.handlers.find(event.provider, event.eventType)?.id ?? null };
    } catch (error) {
      await tx.settle().catch(() => undefined);
      await tx.query('ROLLBACK TO SAVEPOINT effect_preview');
      if (isTimeoutOfWait(error)) throw error;
      const handler = this.handlers.find(event.provider, event.eventType)?.id ?? null;
      if (error instanceof PermanentError) return { status: 'quarantined', reason: error.reason, handler };
      const last =
        event.attempts + 1 >= this.config.worker.maxAttempts &&
        !waitsWithoutAttempt(error, event, this.clock.now(), this.config.worker.waitMs);
      return { status: last ? 'quarantined' : 'retry', reason: shortError(error), handler };
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
    // Never settled as ignored here: the row was accepted, maybe by an instance whose endpoints file
    // is newer than this one's (a rolling deploy). An endpoint this instance does not know is retried,
    // for an instance that knows it; a refusal is quarantined with its reason, for an operator to
    // replay once every instance agrees (a replay checks the endpoint's configuration then).
    const refusal = processingRefusal(this.config.endpoints, event);
    if (refusal === 'endpoint_not_configured') throw new TransientError('endpoint_not_configured on this instance');
    if (refusal) return { status: 'quarantined', reason: refusal };
    // Only a reclaimed lease gets here at the limit: its workers kept dying on it.
    if (event.attempts >= this.config.worker.maxAttempts) return { status: 'quarantined', reason: 'max_attempts' };
    if (event.unreadable?.reason === 'payload_key_unknown' || event.unreadable?.reason === 'payload_moving') {
      // Another instance may hold a newer key ring (a rotation rolling out), or retention was carrying
      // the payload to today as the claim read it: retry, quarantine at the limit.
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
}
