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
    const events = await this.repository.claim(this.nextLease(), this.clock.now(), CLAIM_BATCH, this.config.worker.leaseMs);
    // Spread the claim over the lanes so a small claim still runs in parallel.
    const size = Math.max(1, Math.min(TRANSACTION_BATCH, Math.ceil(events.length / this.concurrency)));
    const batches: InboxEvent[][] = [];
    for (let i = 0; i < events.length; i += size) batches.push(events.slice(i, i + size));
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < batches.length) await this.processBatch(batches[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, batches.length) }, lane));
    return events.length;
  }

  /**
   * Works until no event is due: each lane claims and processes its own batch
   * in a loop, so no lane waits for another between rounds. Resolves with the
   * number of events claimed.
   */
  async drain(stopped: () => boolean = () => false): Promise<number> {
    let total = 0;
    const lane = async (): Promise<void> => {
      while (!stopped()) {
        const events = await this.repository.claim(this.nextLease(), this.clock.now(), TRANSACTION_BATCH, this.config.worker.leaseMs);
        if (events.length === 0) return;
        total += events.length;
        await this.processBatch(events);
      }
    };
    await Promise.all(Array.from({ length: this.concurrency }, lane));
    return total;
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
