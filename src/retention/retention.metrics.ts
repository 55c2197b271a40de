import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';

/** What the retention job did to a row. */
export type RetentionAction =
  | 'inbox_payload_purged'
  | 'inbox_identity_deleted'
  | 'outbox_delivered_pruned'
  | 'inbox_quarantined_deleted'
  | 'outbox_abandoned_pruned'
  | 'orders_pruned'
  | 'audit_pruned'
  | 'reconciliation_runs_pruned'
  | 'rejections_pruned';

/** Rows touched by the retention job, and its runs: the job calls these once per batch and per run. */
@Injectable()
export class RetentionMetrics {
  private readonly rows: Counter<'action'>;
  private readonly runs: Counter<'outcome'>;

  constructor(registry: MetricsRegistry) {
    this.rows = new Counter({
      name: 'retention_rows_total',
      help: 'Rows changed by the retention job by action (inbox_payload_purged, inbox_identity_deleted, outbox_delivered_pruned, inbox_quarantined_deleted, outbox_abandoned_pruned, orders_pruned, audit_pruned, reconciliation_runs_pruned, rejections_pruned)',
      labelNames: ['action'],
      registers: [registry],
    });
    this.runs = new Counter({
      name: 'retention_runs_total',
      help: 'Retention job runs by outcome (ok, failed)',
      labelNames: ['outcome'],
      registers: [registry],
    });
  }

  removed(action: RetentionAction, count: number): void {
    if (count > 0) this.rows.inc({ action }, count);
  }

  run(outcome: 'ok' | 'failed'): void {
    this.runs.inc({ outcome });
  }
}
