import { Injectable, Logger } from '@nestjs/common';
import { RelayMetrics } from './relay.metrics';
import { Admission, admit, DestinationState, giveBack, report, RoundTally, Transition } from './destinations/destination-gate';
import { DestinationRegistry } from './destinations/destination.registry';
import { OutboxRepository } from './outbox.repository';

/** Writes lost to another relay are decided again on the fresh row this many times, then the round gives up (safe: sends nothing). */
const WRITE_TRIES = 4;

/**
 * The relay's side of each destination's shared state (destinations/destination-gate.ts
 * decides): what a round may send, what it hands back, what it learned. Every change is
 * an optimistic write of the `outbox_destinations` row, so relays on any number of
 * instances agree on one circuit, one pause and one token bucket per destination, and
 * only the instance whose write made a transition logs it.
 */
@Injectable()
export class DestinationGates {
  private readonly logger = new Logger(DestinationGates.name);
  /** The row as this instance last read or wrote it. */
  private readonly known = new Map<string, DestinationState>();

  constructor(
    private readonly repository: OutboxRepository,
    private readonly destinations: DestinationRegistry,
    private readonly metrics: RelayMetrics,
  ) {}

  /** One read of every destination's row, then a write for each whose admission changes it; `wanted`: entries a round would take of each. */
  async admit(now: Date, wanted: (destination: string) => number, probeLeaseMs: number): Promise<Map<string, Admission>> {
    const names = this.destinations.names();
    let states = await this.repository.readDestinations(names);
    if (states.length < names.length) {
      await this.repository.ensureDestinations(names);
      states = await this.repository.readDestinations(names);
    }
    const admissions = new Map<string, Admission>();
    for (const state of states) {
      const room = wanted(state.destination);
      if (room === 0) {
        // Its requests in flight fill this instance's share: nothing to ask of the shared row.
        this.known.set(state.destination, state);
        admissions.set(state.destination, { grant: 0, probe: false });
        continue;
      }
      const settings = this.destinations.get(state.destination)!.settings;
      const admission = await this.change(state, (s) => {
        const a = admit(s, settings, now, room, probeLeaseMs);
        return { next: a.next, transitions: a.transition ? [a.transition] : [], result: a };
      });
      admissions.set(state.destination, admission ?? { grant: 0, probe: false });
    }
    return admissions;
  }

  /**
   * The destinations a round would admit in full without writing their row (circuit closed with
   * no failure counted, no pause, no rate limit), as this instance last read or wrote it: entries
   * for them may skip the claim (hand-over, see OutboxRelay). Once a destination has failed, its
   * entries go through the claim until it answers again, so an outage is met by the circuit, not
   * by concurrent handed-over rounds. The row is read again by every claim round (at least every
   * poll), and this instance's own answers update it at once.
   */
  unhindered(now: Date, probeLeaseMs: number): string[] {
    const names: string[] = [];
    for (const [name, state] of this.known) {
      const settings = this.destinations.get(name)?.settings;
      if (!settings || state.failures > 0) continue;
      const a = admit(state, settings, now, 1, probeLeaseMs);
      if (a.grant === 1 && !a.probe && !a.next) names.push(name);
    }
    return names;
  }

  /** Tokens and probes granted but not used (fewer entries were due) go back for the next round or instance. */
  async giveBack(admissions: Map<string, Admission>, claimed: Map<string, number>): Promise<void> {
    for (const [destination, admission] of admissions) {
      const unused = admission.grant - (claimed.get(destination) ?? 0);
      const state = this.known.get(destination);
      if (unused <= 0 || !state) continue;
      const settings = this.destinations.get(destination)!.settings;
      await this.change(state, (s) => ({ next: giveBack(s, settings, unused, admission.probe), transitions: [], result: true }));
    }
  }

  /** What a round's answers say about the destination: circuit, pause. */
  async report(destination: string, now: Date, tally: RoundTally): Promise<void> {
    const state = this.known.get(destination);
    const registered = this.destinations.get(destination);
    if (!state || !registered) return;
    await this.change(state, (s) => ({ ...report(s, registered.settings, now, tally), result: true }));
  }

  /** Applies `decide` to the row and writes the result if nobody wrote the row meanwhile; else decides again on the fresh row. */
  private async change<T>(
    state: DestinationState,
    decide: (s: DestinationState) => { next?: DestinationState; transitions: Transition[]; result: T },
  ): Promise<T | undefined> {
    let current = state;
    for (let i = 0; i < WRITE_TRIES; i++) {
      const { next, transitions, result } = decide(current);
      if (!next) {
        this.known.set(current.destination, current);
        return result;
      }
      if (await this.repository.writeDestination(next, current.version)) {
        this.known.set(current.destination, { ...next, version: current.version + 1 });
        for (const transition of transitions) this.logTransition(next, transition);
        return result;
      }
      const [fresh] = await this.repository.readDestinations([current.destination]);
      if (!fresh) return undefined;
      current = fresh;
    }
    return undefined;
  }

  private logTransition(state: DestinationState, transition: Transition): void {
    this.metrics.transition(state.destination, transition);
    const fields = {
      destination: state.destination,
      circuit: state.circuit,
      failures: state.failures,
      retryAt: state.retryAt,
      pausedUntil: state.pausedUntil,
      error: state.lastError,
    };
    const message = {
      opened: 'destination circuit opened: no requests until the cool-down ends',
      half_open: 'destination circuit half open: one probe goes',
      reopened: 'destination probe failed: circuit open again',
      closed: 'destination circuit closed: deliveries resume',
      paused: 'destination asked for a pause (Retry-After): no requests until then',
    }[transition];
    if (transition === 'closed' || transition === 'half_open') this.logger.log(fields, message);
    else this.logger.warn(fields, message);
  }
}
