import type { DestinationSettings as AllSettings } from '../../config/destinations';

/** What the gate reads of a destination's settings. */
type DestinationSettings = Pick<AllSettings, 'circuit' | 'rateLimit'>;

/**
 * Pure decisions about a destination's health and pace, shared by every relay
 * instance through its `outbox_destinations` row: a circuit (closed -> open after
 * N consecutive "down" answers -> half_open with one probe across all instances
 * after the cool-down -> closed on an answer), a pause asked for by Retry-After,
 * and a token bucket (requests per second). The relay reads the row, decides here,
 * and writes the result back only if nobody changed the row meanwhile.
 */
export type CircuitState = 'closed' | 'open' | 'half_open';

export interface DestinationState {
  destination: string;
  circuit: CircuitState;
  /** Consecutive "down" answers while closed. */
  failures: number;
  /** Open: when the cool-down ends and a probe may go. */
  retryAt: Date | null;
  /** Half open: the probe in flight holds the destination until then (its lease). */
  probeUntil: Date | null;
  /** Retry-After of a 429 or 503: no request before then. */
  pausedUntil: Date | null;
  /** Rate limit bucket; null: full. */
  tokens: number | null;
  tokensAt: Date | null;
  lastError: string | null;
  /** When the circuit or the pause last changed. */
  changedAt: Date | null;
  /** Bumped by every write: the optimistic-concurrency fence. */
  version: number;
}

export function initialState(destination: string): DestinationState {
  return {
    destination,
    circuit: 'closed',
    failures: 0,
    retryAt: null,
    probeUntil: null,
    pausedUntil: null,
    tokens: null,
    tokensAt: null,
    lastError: null,
    changedAt: null,
    version: 0,
  };
}

/** A change worth one log line (written by the instance whose write made it). */
export type Transition = 'opened' | 'half_open' | 'reopened' | 'closed' | 'paused';

export interface Admission {
  /** How many entries this round may claim. */
  grant: number;
  /** The one request a half-open circuit lets through. */
  probe: boolean;
  /** The state to write, or undefined when nothing changes. */
  next?: DestinationState;
  transition?: Transition;
}

/** What a round may send to this destination now: up to `wanted`. */
export function admit(state: DestinationState, settings: DestinationSettings, now: Date, wanted: number, probeLeaseMs: number): Admission {
  const t = now.getTime();
  if (state.pausedUntil && state.pausedUntil.getTime() > t) return { grant: 0, probe: false };
  let next: DestinationState | undefined;
  let transition: Transition | undefined;
  let grant = wanted;
  let probe = false;
  if (state.circuit === 'open' || state.circuit === 'half_open') {
    const waiting = state.circuit === 'open' ? state.retryAt : state.probeUntil;
    if (waiting && waiting.getTime() > t) return { grant: 0, probe: false };
    // The cool-down is over (or the last probe's relay died): exactly one instance wins this write.
    next = { ...state, circuit: 'half_open', probeUntil: new Date(t + probeLeaseMs) };
    if (state.circuit === 'open') {
      transition = 'half_open';
      next.changedAt = now;
    }
    grant = 1;
    probe = true;
  }
  const limit = settings.rateLimit;
  if (limit) {
    const available = refill(state, limit, t);
    grant = Math.min(grant, Math.floor(available));
    if (grant === 0) return { grant: 0, probe: false };
    // Never stamped back: an instance whose clock is behind would have the next one refill that gap again.
    const tokensAt = state.tokensAt && state.tokensAt.getTime() > t ? state.tokensAt : now;
    next = { ...(next ?? state), tokens: available - grant, tokensAt };
  }
  return { grant, probe, next, transition };
}

/** Hands back what an admission granted but the claim did not use (fewer entries were due). */
export function giveBack(
  state: DestinationState,
  settings: DestinationSettings,
  unused: number,
  probeUnused: boolean,
): DestinationState | undefined {
  if (unused <= 0) return undefined;
  const limit = settings.rateLimit;
  const tokens = limit && state.tokens !== null;
  // Another instance may probe at once; the circuit stays half open.
  const probe = probeUnused && state.circuit === 'half_open';
  if (!tokens && !probe) return undefined;
  const next = { ...state };
  if (probe) next.probeUntil = null;
  if (tokens) next.tokens = Math.min(limit.burst, state.tokens! + unused);
  return next;
}

/** What one round learned about a destination. */
export interface RoundTally {
  /** Answers that show the destination is up: 2xx, 409, 4xx, 429, 408. */
  answered: number;
  /** Connect errors, 5xx, timeouts. */
  down: number;
  /** The longest Retry-After of a 429 or 503 in the round. */
  retryAfterMs?: number;
  lastError?: string;
}

export interface Report {
  next?: DestinationState;
  transitions: Transition[];
}

/** A Retry-After longer than this is read as this (a misconfigured destination must not park us for days). */
export const MAX_PAUSE_MS = 3600_000;

export function report(state: DestinationState, settings: DestinationSettings, now: Date, tally: RoundTally): Report {
  const t = now.getTime();
  const next = { ...state };
  const transitions: Transition[] = [];
  if (tally.retryAfterMs !== undefined && tally.retryAfterMs > 0) {
    const until = t + Math.min(tally.retryAfterMs, MAX_PAUSE_MS);
    if (!state.pausedUntil || state.pausedUntil.getTime() < until) {
      if (!state.pausedUntil || state.pausedUntil.getTime() <= t) transitions.push('paused');
      next.pausedUntil = new Date(until);
    }
  }
  if (tally.answered > 0) {
    next.failures = 0;
    if (state.circuit !== 'closed') {
      Object.assign(next, { circuit: 'closed', retryAt: null, probeUntil: null });
      transitions.push('closed');
    }
  } else if (tally.down > 0) {
    next.lastError = tally.lastError ?? next.lastError;
    if (state.circuit === 'half_open') {
      Object.assign(next, { circuit: 'open', retryAt: new Date(t + settings.circuit.cooldownMs), probeUntil: null });
      transitions.push('reopened');
    } else if (state.circuit === 'closed') {
      next.failures = state.failures + tally.down;
      if (next.failures >= settings.circuit.failures) {
        Object.assign(next, { circuit: 'open', retryAt: new Date(t + settings.circuit.cooldownMs) });
        transitions.push('opened');
      }
    }
  }
  if (transitions.length > 0) next.changedAt = now;
  const changed =
    transitions.length > 0 ||
    next.failures !== state.failures ||
    (next.pausedUntil?.getTime() ?? 0) !== (state.pausedUntil?.getTime() ?? 0);
  return { next: changed ? next : undefined, transitions };
}

function refill(state: DestinationState, limit: { perSecond: number; burst: number }, t: number): number {
  if (state.tokens === null || !state.tokensAt) return limit.burst;
  // Clocks of two instances may differ a little: never refill backwards.
  const elapsed = Math.max(0, t - state.tokensAt.getTime());
  return Math.min(limit.burst, state.tokens + (elapsed / 1000) * limit.perSecond);
}
