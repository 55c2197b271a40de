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
      help: 'Events listed by reconciliation by endpoint, outcome (present, accepted, ignored, duplicate, would_accept, redelivery_requested, redelivery_refused, invalid) and reason (of ignored, invalid and refused ones)',
      labelNames: ['endpoint', 'outcome', 'reason'],
      registers: [registry],
    });
    this.runs = new Counter({
      name: 'reconciliation_runs_total',
      help: 'Reconciliation runs by endpoint and outcome (succeeded, failed; one_off: an operator run that moves no cursor succeeded)',
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

  /**
   * A run that moves no cursor (an operator's dry run or one-off window) succeeds as `one_off`
   * and leaves the last success alone: it says nothing of the scheduled runs, and would hide
   * their failing or stalling from the alerts.
   */
  run(endpoint: string, outcome: 'succeeded' | 'failed', at: Date, advancesCursor = true): void {
    this.runs.inc({ endpoint, outcome: outcome === 'succeeded' && !advancesCursor ? 'one_off' : outcome });
    if (outcome === 'succeeded' && advancesCursor) this.lastSuccess.set({ endpoint }, at.getTime() / 1000);
  }
}
