import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { AcceptToDoneMetrics, WorkerMetrics } from './worker.metrics';
import { InboxEventProcessor } from './inbox-event.processor';
import { InboxRepository } from './inbox.repository';
import { InboxEvent } from './inbox.types';

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
 */
@Injectable()
export class InboxWorker {
  private readonly logger = new Logger(InboxWorker.name);
  private readonly concurrency: number;
  /** Claimed batches no lane has started yet. */
  private readonly queue: InboxEvent[][] = [];
  private busyLanes = 0;
  private claiming = false;
  /** A wake-up since the last claim started, or the last claim came back full. */
  private due = false;
  /** The last claim came back full: the next one starts without waiting. */
  private backlog = false;
  private lastClaimAt = -Infinity;
  /** Set while a wake-up waits for the coalescing gap to end. */
  private gapTimer?: NodeJS.Timeout;
  private stopped = false;
  private claimed = 0;
  private idle: (() => void)[] = [];
  private leases = 0;
  /** How long a batch takes, smoothed (unknown before the first): queued batches age inside their lease while they wait. */
  private batchMs: number | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: InboxRepository,
    private readonly processor: InboxEventProcessor,
    private readonly clock: Clock,
    private readonly metrics: WorkerMetrics,
    private readonly latency: AcceptToDoneMetrics,
  ) {
    // Each lane holds one pooled connection; leave room for claims and the API.
    this.concurrency = Math.max(1, Math.min(8, config.databasePoolSize - 2));
  }

  get workerId(): string {
    return this.processor.workerId;
  }

  /** Something may be due: claim it as soon as a lane can take it. */
  wake(): void {
    this.due = true;
    this.pump();
  }

  /** Wakes the worker and resolves, with the number of events claimed meanwhile, once nothing is due or running. */
  async drain(): Promise<number> {
    const before = this.claimed;
    this.wake();
    await this.whenIdle();
    return this.claimed - before;
  }

  /** No new claim starts; resolves once the claimed events are processed (or rolled back). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.gapTimer);
    this.gapTimer = undefined;
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
    while (this.busyLanes < this.concurrency && this.queue.length > 0) this.run(this.queue.shift()!);
    // Claim ahead while the queue holds less than a batch for every lane; until a batch has shown
    // it is quick against the lease, only for the lanes that are free, so no claimed batch waits
    // out its lease in the queue.
    const slow = this.batchMs === undefined || this.batchMs > this.config.worker.leaseMs / 8;
    const freeLanes = this.concurrency - this.busyLanes - this.queue.length;
    const batches = slow ? freeLanes : this.queue.length < this.concurrency ? this.concurrency : 0;
    if (this.due && !this.claiming && !this.stopped && batches > 0 && !this.gapTimer) {
      const wait = this.backlog ? 0 : this.lastClaimAt + this.config.worker.coalesceMs - performance.now();
      if (wait > 0) {
        this.gapTimer = setTimeout(() => {
          this.gapTimer = undefined;
          this.pump();
        }, wait);
        return;
      }
      this.due = false;
      this.claiming = true;
      this.lastClaimAt = performance.now();
      void this.claimAhead(batches).finally(() => {
        this.claiming = false;
        this.pump();
      });
    }
    if (this.busyLanes === 0 && !this.claiming && this.queue.length === 0 && (!this.due || this.stopped)) {
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private async claimAhead(batches: number): Promise<void> {
    const size = batches * TRANSACTION_BATCH;
    try {
      const events = await this.claim(size);
      this.claimed += events.length;
      this.backlog = events.length === size;
      if (this.backlog) this.due = true;
      this.queue.push(...this.split(events, batches));
    } catch (error) {
      // Typically the database is unreachable; the next poll wakes the worker again.
      this.logger.error({ err: (error as Error).message }, 'claim failed');
    }
  }

  private run(batch: InboxEvent[]): void {
    this.busyLanes++;
    const started = Date.now();
    this.processBatch(batch)
      .catch((error: Error) => this.logger.error({ events: batch.length, err: error.message }, 'batch failed; its leases expire and it is retried'))
      .finally(() => {
        const took = Date.now() - started;
        this.batchMs = this.batchMs === undefined ? took : 0.8 * this.batchMs + 0.2 * took;
        this.busyLanes--;
        this.pump();
      });
  }

  private whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.idle.push(resolve);
      this.pump();
    });
  }

  /** A token per claim, not per instance: two lanes of one instance must not pass each other's fence. */
  private nextLease(): string {
    return `${this.workerId}:${++this.leases}`;
  }

  private claim(limit: number): Promise<InboxEvent[]> {
    return this.repository.claim(this.nextLease(), this.clock.now(), limit, this.config.worker.leaseMs);
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
    for (let i = 0; i < events.length; i += size) batches.push(events.slice(i, i + size));
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
