import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics.registry';

/** Outcomes of one delivery attempt of an outbox entry. */
export type RelayOutcome = 'delivered' | 'retry' | 'dead' | 'unresolved' | 'lost_lease';

/** Relay outcomes by destination: the relay calls `outcome(destination, outcome)` once per attempt. */
@Injectable()
export class RelayMetrics {
  private readonly outcomes: Counter<'destination' | 'outcome'>;
  private readonly transitions: Counter<'destination' | 'transition'>;
  private readonly held: Counter<'destination'>;

  constructor(registry: MetricsRegistry) {
    this.outcomes = new Counter({
      name: 'outbox_relay_outcomes_total',
      help: 'Outbox delivery attempts by destination and outcome (delivered, retry, dead, unresolved, lost_lease)',
      labelNames: ['destination', 'outcome'],
      registers: [registry],
    });
    this.transitions = new Counter({
      name: 'outbox_destination_transitions_total',
      help: 'Destination circuit and pause changes (opened, half_open, reopened, closed, paused), counted once across instances',
      labelNames: ['destination', 'transition'],
      registers: [registry],
    });
    this.held = new Counter({
      name: 'outbox_relay_held_total',
      help: 'Due outbox entries the relay held back because an earlier entry of their aggregate was not delivered',
      labelNames: ['destination'],
      registers: [registry],
    });
  }

  transition(destination: string, transition: string): void {
    this.transitions.inc({ destination, transition });
  }

  heldBack(destination: string, count = 1): void {
    this.held.inc({ destination }, count);
  }

  outcome(destination: string, outcome: RelayOutcome | string): void {
    this.outcomes.inc({ destination, outcome });
  }
}
