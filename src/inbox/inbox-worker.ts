import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { AcceptToDoneMetrics, WorkerMetrics } from '../observability/worker.metrics';
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

/**
 * Claims due events in one short statement and processes them in batches, one
 * transaction per batch and a few batches at once. Any number of instances run
 * this side by side; SKIP LOCKED and leases keep them apart.
 */
@Injectable()
export class InboxWorker {
  private readonly concurrency: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: InboxRepository,
    private readonly processor: InboxEventProcessor,
    private readonly clock: Clock,
    private readonly metrics: WorkerMetrics,
    private readonly latency: AcceptToDoneMetrics,
  ) {
    // Each event in flight holds one pooled connection; leave room for claims and the API.
    this.concurrency = Math.max(1, Math.min(8, config.databasePoolSize - 2));
  }

  private claims = 0;

  get workerId(): string {
    return this.processor.workerId;
  }

  /** A token per claim, not per instance: two lanes of one instance must not pass each other's fence. */
  private nextLease(): string {
    return `${this.workerId}:${++this.claims}`;
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

  /**
   * Works until no event is due. One claim at a time, a batch for every lane,
   * keeps a local queue filled ahead of the lanes, and a lane takes the next
   * batch as soon as it is free. (When each lane claimed its own batch, every
   * claim skipped past the rows the other lanes had locked, and the claims cost
   * more than the business transactions.) Once stopped, no claim starts and the
   * lanes finish what is claimed. Resolves with the number of events claimed.
   */
  async drain(stopped: () => boolean = () => false): Promise<number> {
    const claimSize = this.concurrency * TRANSACTION_BATCH;
    const queue: InboxEvent[][] = [];
    let total = 0;
    let exhausted = false;
    let claiming: Promise<void> | undefined;
    const refill = (): Promise<void> =>
      (claiming ??= this.claim(claimSize)
        .then((events) => {
          total += events.length;
          exhausted = events.length < claimSize;
          queue.push(...this.split(events));
        })
        .finally(() => (claiming = undefined)));
    const lane = async (): Promise<void> => {
      for (;;) {
        const mayClaim = !exhausted && !stopped();
        // Claim ahead while the queue still holds a batch for every lane.
        if (mayClaim && queue.length <= this.concurrency) refill().catch(() => undefined); // a lane with nothing to do sees the error below
        const batch = queue.shift();
        if (batch) await this.processBatch(batch);
        else if (claiming) await claiming;
        else if (mayClaim) await refill();
        else return;
      }
    };
    const lanes = await Promise.allSettled(Array.from({ length: this.concurrency }, lane));
    const failed = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    if (failed) throw failed.reason;
    return total;
  }

  private claim(limit: number): Promise<InboxEvent[]> {
    return this.repository.claim(this.nextLease(), this.clock.now(), limit, this.config.worker.leaseMs);
  }

  /** Transaction-sized batches, spread over the lanes so that a small claim still runs in parallel. */
  private split(events: InboxEvent[]): InboxEvent[][] {
    const size = Math.max(1, Math.min(TRANSACTION_BATCH, Math.ceil(events.length / this.concurrency)));
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
