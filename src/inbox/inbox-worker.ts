import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { AcceptToDoneMetrics, WorkerMetrics } from '../observability/worker.metrics';
import { InboxEventProcessor } from './inbox-event.processor';
import { InboxRepository } from './inbox.repository';
import { InboxEvent } from './inbox.types';

/** Events claimed per round trip; small enough that a batch finishes well inside a lease. */
export const CLAIM_BATCH = 32;

/**
 * Claims due events in one short statement and processes them with bounded
 * concurrency, each in its own transaction. Any number of instances run this
 * side by side; SKIP LOCKED and leases keep them apart.
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

  get workerId(): string {
    return this.processor.workerId;
  }

  /** Claims one batch and processes it; resolves with the number of events claimed. */
  async runOnce(): Promise<number> {
    const events = await this.repository.claim(this.workerId, this.clock.now(), CLAIM_BATCH, this.config.worker.leaseMs);
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < events.length) await this.processOne(events[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, events.length) }, lane));
    return events.length;
  }

  private async processOne(event: InboxEvent): Promise<void> {
    const outcome = await this.processor.process(event);
    this.metrics.attempt(outcome);
    if (outcome === 'done') this.latency.observe((this.clock.now().getTime() - event.receivedAt.getTime()) / 1000);
  }
}
