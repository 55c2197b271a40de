import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';

/** Outcomes of one delivery attempt of an outbox entry. */
export type RelayOutcome = 'delivered' | 'retry' | 'dead' | 'unresolved' | 'lost_lease';

/** Relay outcomes by destination: the relay calls `outcome(destination, outcome)` once per attempt. */
@Injectable()
export class RelayMetrics {
  private readonly outcomes: Counter<'destination' | 'outcome'>;

  constructor(registry: MetricsRegistry) {
    this.outcomes = new Counter({
      name: 'outbox_relay_outcomes_total',
      help: 'Outbox delivery attempts by destination and outcome (delivered, retry, dead, unresolved, lost_lease)',
      labelNames: ['destination', 'outcome'],
      registers: [registry],
    });
  }

  outcome(destination: string, outcome: RelayOutcome | string): void {
    this.outcomes.inc({ destination, outcome });
  }
}
