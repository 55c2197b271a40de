import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';
import { ReconciledOutcome } from './reconciliation.types';

/** What reconciliation runs found, and when each endpoint last succeeded (on the instance that ran it). */
@Injectable()
export class ReconciliationMetrics {
  private readonly events: Counter<'endpoint' | 'outcome' | 'reason'>;
  private readonly runs: Counter<'endpoint' | 'outcome'>;
  private readonly lastSuccess: Gauge<'endpoint'>;

  constructor(registry: MetricsRegistry) {
    this.events = new Counter({
      name: 'reconciled_events_total',
      help: 'Events listed by reconciliation by endpoint, outcome (present, accepted, ignored, duplicate, would_accept, redelivery_requested, invalid) and reason (of ignored and invalid ones)',
      labelNames: ['endpoint', 'outcome', 'reason'],
      registers: [registry],
    });
    this.runs = new Counter({
      name: 'reconciliation_runs_total',
      help: 'Reconciliation runs by endpoint and outcome (succeeded, failed)',
      labelNames: ['endpoint', 'outcome'],
      registers: [registry],
    });
    this.lastSuccess = new Gauge({
      name: 'reconciliation_last_success_timestamp_seconds',
      help: 'Unix time of the last successful reconciliation run of the endpoint on this instance',
      labelNames: ['endpoint'],
      registers: [registry],
    });
  }

  event(endpoint: string, outcome: ReconciledOutcome, count = 1, reason = ''): void {
    if (count > 0) this.events.inc({ endpoint, outcome, reason }, count);
  }

  run(endpoint: string, outcome: 'succeeded' | 'failed', at: Date): void {
    this.runs.inc({ endpoint, outcome });
    if (outcome === 'succeeded') this.lastSuccess.set({ endpoint }, at.getTime() / 1000);
  }
}
