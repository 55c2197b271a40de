import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';

/** The payload re-encryption job (maintenance role): rows moved to the current key, and what is left. */
@Injectable()
export class ReencryptionMetrics {
  private readonly rows: Counter<'outcome'>;
  private readonly remaining: Gauge<'key_id'>;

  constructor(registry: MetricsRegistry) {
    this.rows = new Counter({
      name: 'payload_reencryption_rows_total',
      help: 'Inbox payloads the re-encryption job sealed with the current key (resealed), or could not open (unreadable)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.remaining = new Gauge({
      name: 'payload_reencryption_remaining',
      help: 'Stored inbox payloads not under the current key after the last re-encryption run, by key id ("clear": not encrypted)',
      labelNames: ['key_id'],
      registers: [registry],
    });
  }

  moved(outcome: 'resealed' | 'unreadable', count: number): void {
    if (count > 0) this.rows.inc({ outcome }, count);
  }

  /** Replaces the figures of the last run: a key no longer listed has no row left. */
  left(byKey: { keyId: string | null; rows: number }[]): void {
    this.remaining.reset();
    for (const { keyId, rows } of byKey) this.remaining.set({ key_id: keyId ?? 'clear' }, rows);
  }
}
