import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';

/** Outcomes of one worker attempt on an inbox event. */
export type WorkerAttemptOutcome = 'done' | 'ignored' | 'retry' | 'quarantined' | 'lost_lease' | 'deferred' | 'waiting';

/** Worker attempts by outcome: the worker calls `attempt(outcome)` once per processed event. */
@Injectable()
export class WorkerMetrics {
  private readonly attempts: Counter<'outcome'>;

  constructor(registry: MetricsRegistry) {
    this.attempts = new Counter({
      name: 'webhook_worker_attempts_total',
      help: 'Worker attempts on inbox events by outcome (done, ignored, retry, quarantined, lost_lease; deferred: handed back for its confirm read, waiting: an early event handed back, neither one an attempt)',
      labelNames: ['outcome'],
      registers: [registry],
    });
  }

  attempt(outcome: WorkerAttemptOutcome | string): void {
    this.attempts.inc({ outcome });
  }
}

/**
 * Time from acceptance (received_at) to completion (completed_at) of an event: the
 * figure that tells "accepted" from "done". The worker calls `observe(seconds)` on completion.
 */
@Injectable()
export class AcceptToDoneMetrics {
  private readonly histogram: Histogram;

  constructor(registry: MetricsRegistry) {
    this.histogram = new Histogram({
      name: 'webhook_accept_to_done_seconds',
      help: 'Seconds from accepting a webhook to completing its business effect',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
      registers: [registry],
    });
  }

  observe(seconds: number): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.histogram.observe(seconds);
  }
}
