import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { leftBehind } from '../common/tenant-turns';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { WorkerLimits } from './worker-limits';
import { AcceptToDoneMetrics, WorkerMetrics } from './worker.metrics';
import { InboxEventProcessor } from './inbox-event.processor';
import { compareIds, InboxRepository, InsertClaim } from './inbox.repository';
import { InboxEvent } from './inbox.types';
import type { WorkerIntake } from './worker-intake.port';

/** Events claimed by runOnce(); small enough that they all finish well inside a lease. */
export const CLAIM_BATCH = 512;
/**
 * Events per transaction (each in its own savepoint). Kept under PostgreSQL's
 * 64 cached subtransactions per transaction, past which every reader slows down.
 */
export const TRANSACTION_BATCH = 64;
/** The smallest batch a claim is split into for the lanes. */
const MIN_SPLIT = 16;
/**
 * A claim that found work but came back short is followed by another this soon (or at the poll, if
 * sooner), in a worker its scheduler started: more may be falling due meanwhile (a paced bulk
 * replay, retries), and taken a few at a time they spread over the second instead of all coming at
 * the next poll (issue 34).
 */
const FOLLOW_UP_MS = 100;

/**
 * Claims due events in one short statement and processes them in batches, one
 * transaction per batch and several batches at once. Any number of instances
 * run this side by side; SKIP LOCKED and leases keep them apart.
 *
 * Driven by wake(): a wake-up claims at once when a lane is free, even while
 * other batches are still running, so a new event never waits for the batch in
 * front of it. One claim at a time, a batch for every lane, keeps a short queue
 * ahead of the lanes under load (when each lane claimed its own batch, every
 * claim skipped past the rows the other lanes had locked, and the claims cost
 * more than the business transactions).
 *
 * While wake-ups keep coming, claims start at most every WORKER_COALESCE_MS:
 * at moderate rates each event would otherwise pay a claim and a transaction of
 * its own, and a few milliseconds gather several into one. A wake-up after a
 * quiet spell, or a claim that came back full, claims at once.
 *
 * Once started by its scheduler, the worker also takes the events this instance
 * accepts without claiming them: while a lane is free for them, the ingestion's
 * insert commits them already claimed under a lease of the worker's (insertClaim),
 * and hands them over (handOver); they wait for the same coalescing gap. Saved: a
 * claim statement per batch and a NOTIFY. If the instance dies first, the lease
 * expires and any worker takes them over, as after a crash mid-batch.
 */
@Injectable()
export class InboxWorker implements WorkerIntake {
  private readonly logger = new Logger(InboxWorker.name);
  private readonly concurrency: number;
  /** The loop's state, all of it: what is queued, running, handed over, and when the next claim may start. */
  private readonly loop = new WorkerLoop();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: InboxRepository,
    private readonly processor: InboxEventProcessor,
    private readonly clock: Clock,
    private readonly metrics: WorkerMetrics,
    private readonly latency: AcceptToDoneMetrics,
    private readonly limits: WorkerLimits,
  ) {
    // Each lane holds one pooled connection; leave room for claims and the API.
    this.concurrency = Math.max(1, Math.min(8, config.databasePoolSize - 2));
  }

  get workerId(): string {
    return this.processor.workerId;
  }

  /** Scheduled: from now on, events this instance accepts may be committed already claimed for it. */
  start(): void {
    this.loop.started = true;
  }

  /**
   * A lease for the new events of one insert, when the worker can take them at once (started, not
   * stopping, its batches known to be quick against the lease, a lane free and nothing queued):
   * they are committed as `processing` under it. With every lane busy, only the events of tenants
   * with nothing queued or handed over here, which then start ahead of the queue (caughtUp): a
   * claim during a backlog can take a hundred milliseconds and more, and they need none. Undefined:
   * insert them pending, for any worker's claim.
   */
  insertClaim(): InsertClaim | undefined {
    if (!this.loop.started || this.loop.stopped || !this.quickBatches() || this.loop.handed.length >= TRANSACTION_BATCH) return undefined;
    // Only what a lane will start soon: a handed-over event's lease runs from its insert.
    const free = this.loop.busyLanes < this.concurrency && this.loop.queue.length === 0;
    const waiting = free
      ? undefined
      : this.mayPass() && this.laneFreesSoon() && this.loop.ahead < this.concurrency
        ? this.notCaughtUp()
        : undefined;
    if (!free && !waiting) return undefined;
    this.loop.handLease ??= this.nextLease();
    return {
      lease: this.loop.handLease,
      until: new Date(this.clock.now().getTime() + this.config.worker.leaseMs),
      takes: waiting ? (tenantId, endpointId) => !waiting.has(tenantId) && this.limits.takes(tenantId, endpointId) : this.limits.takes,
    };
  }

  leftPending(tenantIds: string[]): void {
    if (!this.loop.started) return;
    for (const tenant of tenantIds) this.loop.leftPending.set(tenant, this.loop.claims);
  }

  /** Events committed under an insertClaim lease: processed as claimed ones, after the coalescing gap. */
  handOver(events: InboxEvent[]): void {
    if (events.length === 0) return;
    this.loop.claimed += events.length;
    this.loop.handed.push(...events);
    this.pump();
  }

  /** Something may be due: claim it as soon as a lane can take it. */
  wake(): void {
    this.loop.due = true;
    this.pump();
  }

  /** Wakes the worker and resolves, with the number of events claimed meanwhile, once nothing is due or running. */
  async drain(): Promise<number> {
    const before = this.loop.claimed;
    this.wake();
    await this.whenIdle();
    return this.loop.claimed - before;
  }

  /** No new claim starts; resolves once the claimed events are processed (or rolled back). */
  async stop(): Promise<void> {
    this.loop.stopped = true;
    clearTimeout(this.loop.gapTimer);
    this.loop.gapTimer = undefined;
    clearTimeout(this.loop.limitTimer);
    this.loop.limitTimer = undefined;
    clearTimeout(this.loop.followUpTimer);
    this.loop.followUpTimer = undefined;
    await this.whenIdle();
  }

  /** Claims one batch and processes it; resolves with the number of events claimed. */
  async runOnce(): Promise<number> {
    const batches = this.split(await this.claim(CLAIM_BATCH));
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < batches.length) await this.processBatch(batches[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, batches.length) }, lane));
    return batches.reduce((n, batch) => n + batch.length, 0);
  }

  private pump(): void {
    this.startLanes();
    // Claim ahead while the queue holds less than a batch for every lane; until a batch has shown
    // it is quick against the lease, only for the lanes that are free, so no claimed batch waits
    // out its lease in the queue.
    const freeLanes = this.concurrency - this.loop.busyLanes - this.loop.queue.length;
    const batches = !this.quickBatches() ? freeLanes : this.loop.queue.length < this.concurrency ? this.concurrency : 0;
    const claim = this.loop.due && !this.loop.claiming && !this.loop.stopped && batches > 0;
    if ((claim || this.loop.handed.length > 0) && !this.loop.gapTimer) {
      // Handed-over events wait for the gap too (they hold their lease already); a stopping worker runs them at once.
      const wait = this.loop.backlog || this.loop.stopped ? 0 : this.loop.lastClaimAt + this.config.worker.coalesceMs - performance.now();
      if (wait > 0) {
        this.loop.gapTimer = setTimeout(() => {
          this.loop.gapTimer = undefined;
          this.pump();
        }, wait);
        return;
      }
      this.loop.lastClaimAt = performance.now();
      if (this.loop.handed.length > 0) {
        this.loop.handLease = undefined;
        // A batch is completed under one lease: an insert that took its lease before this gap and
        // committed after it hands over events of the lease before.
        const byLease = new Map<string, InboxEvent[]>();
        for (const event of this.loop.handed.splice(0)) {
          const group = byLease.get(event.lease);
          if (group) group.push(event);
          else byLease.set(event.lease, [event]);
        }
        for (const events of byLease.values()) this.enqueue(events, this.caughtUp(events));
        this.startLanes();
      }
      if (claim) {
        this.loop.due = false;
        this.loop.claiming = true;
        void this.claimAhead(batches).finally(() => {
          this.loop.claiming = false;
          this.pump();
        });
      }
    }
    if (
      this.loop.busyLanes === 0 &&
      !this.loop.claiming &&
      this.loop.queue.length === 0 &&
      this.loop.handed.length === 0 &&
      (!this.loop.due || this.loop.stopped)
    ) {
      for (const resolve of this.loop.idle.splice(0)) resolve();
    }
  }

  /** A batch has shown it takes well under a lease (an eighth), so claimed events may wait for a lane. */
  private quickBatches(): boolean {
    return this.loop.batchMs !== undefined && this.loop.batchMs <= this.config.worker.leaseMs / 8;
  }

  private startLanes(): void {
    while (this.loop.busyLanes < this.concurrency && this.loop.queue.length > 0) {
      if (this.loop.ahead > 0) this.loop.ahead--;
      this.run(this.loop.queue.shift()!);
    }
  }

  private async claimAhead(batches: number): Promise<void> {
    const size = batches * TRANSACTION_BATCH;
    const claim = ++this.loop.claims;
    try {
      const events = await this.claim(size);
      this.loop.claimed += events.length;
      this.loop.backlog = events.length === size;
      this.catchUp(events, claim);
      if (this.loop.backlog) this.loop.due = true;
      else if (events.length > 0) this.followUp();
      if (this.limits.wakeInMs !== undefined) this.wakeAfter(this.limits.wakeInMs);
      // Those the claim left due work behind for stay behind (catchUp).
      this.enqueue(events, this.caughtUp(events.filter((e) => !this.loop.behind.has(e.tenantId))), batches);
    } catch (error) {
      // Typically the database is unreachable; the next poll wakes the worker again.
      this.logger.error({ err: (error as Error).message }, 'claim failed');
    }
  }

  /**
   * Of `events` (a claim's, less the tenants it left due work behind for: catchUp), the tenants
   * with nothing queued or handed over here: their events start next, in batches of their own, not
   * behind the queue inside a backlog's transactions (issue 34). Not a tenant or endpoint under a
   * limit: its claim may have stopped at its budget. And nobody once the oldest queued batch has
   * waited an eighth of a lease: from then on it is passed no more, so with batches quick against
   * the lease (quickBatches) it still ends well inside its own.
   */
  private caughtUp(events: InboxEvent[]): Set<string> | undefined {
    if (this.loop.queue.length === 0 || !this.mayPass()) return undefined;
    const candidates = this.limits.any ? events.filter((e) => !this.limits.covers(e)) : events;
    const waiting = this.waitingTenants();
    const first = new Set(candidates.map((e) => e.tenantId).filter((tenant) => !waiting.has(tenant)));
    return first.size > 0 ? first : undefined;
  }

  /** Batches may still go ahead: the oldest queued batch has waited less than an eighth of a lease. */
  private mayPass(): boolean {
    const oldest = Math.min(
      this.loop.queuedAt.get(this.loop.queue[0]) ?? Infinity,
      this.loop.queuedAt.get(this.loop.queue[this.loop.ahead]) ?? Infinity,
    );
    return performance.now() - oldest < this.config.worker.leaseMs / 8;
  }

  /** A lane should free soon: one of the running batches started less than an eighth of a lease ago (not every lane stuck). */
  private laneFreesSoon(): boolean {
    const now = Date.now();
    for (const started of this.loop.running.values()) if (now - started < this.config.worker.leaseMs / 8) return true;
    return this.loop.running.size < this.concurrency;
  }

  /**
   * From a claim (numbered `claim`): the tenants it left due work behind for (of a full claim,
   * those holding an even share of it or more: the claim serves the tenants in turn, so one with
   * less had nothing more due; of a short claim, none), and, of the tenants an insert left pending
   * before it started, those it caught up (absent from it, or not behind).
   */
  private catchUp(events: InboxEvent[], claim: number): void {
    const counts = new Map<string, number>();
    for (const e of events) counts.set(e.tenantId, (counts.get(e.tenantId) ?? 0) + 1);
    this.loop.behind = leftBehind(counts, this.loop.backlog);
    for (const [tenant, since] of this.loop.leftPending)
      if (since < claim && !this.loop.behind.has(tenant)) this.loop.leftPending.delete(tenant);
  }

  /** The tenants whose events may not be taken at an insert while lanes are busy: queued or handed over here, behind in the last claim, or left pending since. */
  private notCaughtUp(): Set<string> {
    const waiting = this.waitingTenants();
    for (const tenant of this.loop.behind) waiting.add(tenant);
    for (const tenant of this.loop.leftPending.keys()) waiting.add(tenant);
    return waiting;
  }

  /** The tenants with events queued or handed over here: theirs never go ahead of their own. */
  private waitingTenants(): Set<string> {
    const waiting = new Set(this.loop.handed.map((e) => e.tenantId));
    for (const batch of this.loop.queue) for (const e of batch) waiting.add(e.tenantId);
    return waiting;
  }

  /**
   * Queues events in transaction-sized batches for `lanes`: those of the tenants in `first` after
   * the batches that went ahead before them, the rest at the back.
   */
  private enqueue(events: InboxEvent[], first: Set<string> | undefined, lanes?: number): void {
    const ahead = this.split(first ? events.filter((e) => first.has(e.tenantId)) : [], lanes);
    const behind = this.split(first ? events.filter((e) => !first.has(e.tenantId)) : events, lanes);
    this.loop.queue.splice(this.loop.ahead, 0, ...ahead);
    this.loop.ahead += ahead.length;
    const now = performance.now();
    for (const batch of [...ahead, ...behind]) this.loop.queuedAt.set(batch, now);
    this.loop.queue.push(...behind);
  }

  private run(batch: InboxEvent[]): void {
    this.loop.busyLanes++;
    const started = Date.now();
    this.loop.running.set(batch, started);
    this.processBatch(batch)
      .catch((error: Error) =>
        this.logger.error({ events: batch.length, err: error.message }, 'batch failed; its leases expire and it is retried'),
      )
      .finally(() => {
        const took = Date.now() - started;
        this.loop.running.delete(batch);
        this.loop.batchMs = this.loop.batchMs === undefined ? took : 0.8 * this.loop.batchMs + 0.2 * took;
        this.loop.busyLanes--;
        // A limited key's place is free again: its next events may be due now.
        if (this.limits.any && batch.some(this.limits.covers)) this.loop.due = true;
        this.pump();
      });
  }

  /** Scheduled workers only (the scheduler polls the others' way): a claim in FOLLOW_UP_MS, unless one is set already. */
  private followUp(): void {
    if (!this.loop.started || this.loop.stopped || this.loop.followUpTimer) return;
    this.loop.followUpTimer = setTimeout(
      () => {
        this.loop.followUpTimer = undefined;
        if (!this.loop.stopped) this.wake();
      },
      Math.min(FOLLOW_UP_MS, this.config.worker.pollMs),
    );
    this.loop.followUpTimer.unref();
  }

  /** Wakes the worker in `ms` (a limited key's next token), unless a wake-up is already set for sooner. */
  private wakeAfter(ms: number): void {
    const at = performance.now() + ms;
    if (this.loop.limitTimer && this.loop.limitTimerAt! <= at) return;
    clearTimeout(this.loop.limitTimer);
    this.loop.limitTimerAt = at;
    this.loop.limitTimer = setTimeout(() => {
      this.loop.limitTimer = undefined;
      if (!this.loop.stopped) this.wake();
    }, ms);
    this.loop.limitTimer.unref();
  }

  private whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.loop.idle.push(resolve);
      this.pump();
    });
  }

  /** A token per claim, not per instance: two lanes of one instance must not pass each other's fence. */
  private nextLease(): string {
    return `${this.workerId}:${++this.loop.leases}`;
  }

  private claim(limit: number): Promise<InboxEvent[]> {
    const claim = this.limits.any ? this.limits : this.repository;
    return claim.claim(this.nextLease(), this.clock.now(), limit, this.config.worker.leaseMs);
  }

  /**
   * Transaction-sized batches, spread over `lanes` so that a small claim still
   * runs in parallel. Not below MIN_SPLIT when batch handlers take every event:
   * they apply a few events in the same statements, and round trips, as one, so
   * a finer split would only multiply the transactions.
   */
  private split(events: InboxEvent[], lanes = this.concurrency): InboxEvent[][] {
    const least = this.processor.handledTogether(events) ? MIN_SPLIT : 1;
    const size = Math.min(TRANSACTION_BATCH, Math.max(least, Math.ceil(events.length / lanes)));
    const batches: InboxEvent[][] = [];
    // A claim comes in tenants' turns (the first batch starts every tenant's oldest events); a batch
    // applies its events in arrival order.
    for (let i = 0; i < events.length; i += size) batches.push(events.slice(i, i + size).sort((a, b) => compareIds(a.id, b.id)));
    return batches;
  }

  private async processBatch(events: InboxEvent[]): Promise<void> {
    const outcomes = await this.processor.processBatch(events);
    const now = this.clock.now().getTime();
    outcomes.forEach((outcome, i) => {
      this.metrics.attempt(outcome);
      if (outcome === 'done') this.latency.observe((now - events[i].receivedAt.getTime()) / 1000);
    });
  }
}

/** The worker loop's mutable state, in one place (the worker itself holds only its collaborators). */
class WorkerLoop {
  /** Claimed batches no lane has started yet. */
  readonly queue: InboxEvent[][] = [];
  /** The first `ahead` batches of the queue went ahead of the rest (InboxWorker.caughtUp), in the order they came. */
  ahead = 0;
  /** When each queued batch was queued (performance.now()): once the oldest has waited an eighth of a lease, nothing more goes ahead. */
  readonly queuedAt = new WeakMap<InboxEvent[], number>();
  /** When each running batch started (Date.now()). */
  readonly running = new Map<InboxEvent[], number>();
  /** Claims started so far (their numbers). */
  claims = 0;
  /** Tenants the last full claim left due work behind for: none of theirs is taken at an insert while lanes are busy. */
  behind = new Set<string>();
  /** Tenants an insert left pending, with the number of the last claim started before: cleared by a later claim that catches them up. */
  readonly leftPending = new Map<string, number>();
  /** Events handed over by this instance's ingestion, waiting for the coalescing gap. */
  handed: InboxEvent[] = [];
  /** Started by the scheduler: takes this instance's accepted events (insertClaim). */
  started = false;
  /** The lease of the inserts until the next gap: the events handed over in one gap share it, and one transaction. */
  handLease?: string;
  busyLanes = 0;
  claiming = false;
  /** A wake-up since the last claim started, or the last claim came back full. */
  due = false;
  /** The last claim came back full: the next one starts without waiting. */
  backlog = false;
  lastClaimAt = -Infinity;
  /** Set while a wake-up waits for the coalescing gap to end. */
  gapTimer?: NodeJS.Timeout;
  /** Set while a wake-up waits for a limited key's next token (at limitTimerAt, performance.now()). */
  limitTimer?: NodeJS.Timeout;
  limitTimerAt?: number;
  /** Set while a follow-up claim waits (FOLLOW_UP_MS). */
  followUpTimer?: NodeJS.Timeout;
  stopped = false;
  claimed = 0;
  idle: (() => void)[] = [];
  leases = 0;
  /** How long a batch takes, smoothed (unknown before the first): queued batches age inside their lease while they wait. */
  batchMs: number | undefined;
}
