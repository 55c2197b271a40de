import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { AcceptToDoneMetrics, WorkerMetrics } from '../observability/worker.metrics';
import { ClaimResult, InboxEventProcessor } from './inbox-event.processor';

/** Events claimed by runOnce() at most. */
export const CLAIM_BATCH = 512;
/**
 * Events per claim, and so per transaction (each in its own savepoint). Kept
 * under PostgreSQL's 64 cached subtransactions per transaction, past which
 * every reader slows down.
 */
export const TRANSACTION_BATCH = 64;

/**
 * Runs lanes, each claiming a batch of due events and processing it in one
 * transaction; any number of instances run side by side (SKIP LOCKED).
 *
 * Driven by wake(): a wake-up starts a lane at once when one is free, even
 * while other batches are running, so a new event never waits for the batch in
 * front of it. One claim at a time: a lane whose claim came back full wakes the
 * next one, so a backlog fills every lane within a few claims while a trickle
 * of events costs one claim each, not one per lane.
 */
@Injectable()
export class InboxWorker {
  private readonly logger = new Logger(InboxWorker.name);
  private readonly concurrency: number;
  private busyLanes = 0;
  private claiming = false;
  /** A wake-up since the last claim started, or the last claim came back full. */
  private due = false;
  private stopped = false;
  private claimed = 0;
  private idle: (() => void)[] = [];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly processor: InboxEventProcessor,
    private readonly metrics: WorkerMetrics,
    private readonly latency: AcceptToDoneMetrics,
  ) {
    // Each lane holds one pooled connection; leave room for ingestion and the API.
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
    await this.whenIdle();
  }

  /** Counts and frees the attempts that ended without an outcome (see InboxEventProcessor); the caller wakes the worker. */
  async recover(): Promise<void> {
    try {
      await this.processor.recoverLostAttempts();
    } catch (error) {
      this.logger.error({ err: (error as Error).message }, 'recovery of lost attempts failed');
    }
  }

  /** Claims up to CLAIM_BATCH due events, a batch per lane, and processes them; resolves with the number claimed. */
  async runOnce(): Promise<number> {
    let total = 0;
    let more = true;
    const lane = async (): Promise<void> => {
      while (more && total < CLAIM_BATCH) {
        const limit = Math.min(TRANSACTION_BATCH, CLAIM_BATCH - total);
        const result = await this.processor.processDue(limit, (count) => {
          total += count;
          if (count < limit) more = false;
        });
        this.record(result);
      }
    };
    await Promise.all(Array.from({ length: this.concurrency }, lane));
    return total;
  }

  private pump(): void {
    if (this.due && !this.claiming && !this.stopped && this.busyLanes < this.concurrency) {
      this.due = false;
      this.claiming = true;
      this.busyLanes++;
      const claimed = (count: number) => {
        this.claiming = false;
        this.claimed += count;
        if (count === TRANSACTION_BATCH) this.due = true;
        this.pump();
      };
      this.processor
        .processDue(TRANSACTION_BATCH, claimed)
        .then((result) => this.record(result))
        .catch((error: Error) => this.logger.error({ err: error.message }, 'batch failed; recovery counts its attempts'))
        .finally(() => {
          this.claiming = false;
          this.busyLanes--;
          this.pump();
        });
    }
    if (this.busyLanes === 0 && (!this.due || this.stopped)) {
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.idle.push(resolve);
      this.pump();
    });
  }

  private record({ events, outcomes }: ClaimResult): void {
    const now = Date.now();
    outcomes.forEach((outcome, i) => {
      this.metrics.attempt(outcome);
      if (outcome === 'done') this.latency.observe((now - events[i].receivedAt.getTime()) / 1000);
    });
  }
}
