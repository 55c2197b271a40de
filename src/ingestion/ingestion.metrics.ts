import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';

@Injectable()
export class IngestionMetrics {
  private readonly received: Counter<'endpoint' | 'outcome' | 'reason'>;
  private readonly conflicts: Counter<'endpoint'>;
  private readonly unlogged: Counter<'endpoint'>;

  constructor(registry: MetricsRegistry) {
    this.received = new Counter({
      name: 'webhook_requests_total',
      help: 'Webhook requests by endpoint, outcome (accepted, duplicate, ignored, handshake, rejected) and reason',
      labelNames: ['endpoint', 'outcome', 'reason'],
      registers: [registry],
    });
    this.conflicts = new Counter({
      name: 'webhook_digest_conflicts_total',
      help: 'Copies of a known event id whose payload digest differs from the stored one',
      labelNames: ['endpoint'],
      registers: [registry],
    });
    this.unlogged = new Counter({
      name: 'webhook_rejections_unlogged_total',
      help: 'Rejected webhook requests the rejected-request log did not keep (sampled out, buffer full, flush failed); every one is in webhook_requests_total',
      labelNames: ['endpoint'],
      registers: [registry],
    });
  }

  accepted(endpoint: string): void {
    this.received.inc({ endpoint, outcome: 'accepted', reason: '' });
  }

  duplicate(endpoint: string): void {
    this.received.inc({ endpoint, outcome: 'duplicate', reason: '' });
  }

  ignored(endpoint: string, reason: string): void {
    this.received.inc({ endpoint, outcome: 'ignored', reason });
  }

  /** A verified handshake answered (nothing stored). */
  handshake(endpoint: string): void {
    this.received.inc({ endpoint, outcome: 'handshake', reason: '' });
  }

  rejected(endpoint: string, reason: string): void {
    this.received.inc({ endpoint, outcome: 'rejected', reason });
  }

  rejectionUnlogged(endpoint: string): void {
    this.unlogged.inc({ endpoint });
  }

  digestConflict(endpoint: string): void {
    this.conflicts.inc({ endpoint });
  }
}
