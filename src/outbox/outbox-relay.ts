import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { APP_CONFIG, AppConfig, clockSkewAllowanceMs } from '../config/app-config';
import { Clock } from '../common/clock';
import { leftBehind } from '../common/tenant-turns';
import { RelayMetrics } from './relay.metrics';
import { traceparentOf } from '../tracing/tracing';
import { DestinationGates } from './destination-gates';
import { DeliveryResult, Destination, OperationOutcome, OutboxEntry } from './destinations/destination';
import { RoundTally } from './destinations/destination-gate';
import { DestinationRegistry } from './destinations/destination.registry';
import { OutboxOutcome, OutboxRepository } from './outbox.repository';
import { OutboxTraces, RoundTrace } from './outbox.traces';
import { retryDelayMs } from './retry-policy';
import type { HandOver, PendingWrite, RelayIntake } from './relay-intake.port';

/** Rows claimed per destination per round: small enough that a round finishes well within a lease. */
export const RELAY_BATCH_SIZE = 64;

/** A held entry whose recipient an erasure blanked (OutboxRelay.recheckErasures): settled, never sent. */
const ERASED = Symbol('erased');

/** Handed-over rounds in flight at most; past it, entries are written pending for the claim. */
const MAX_HANDED_ROUNDS = 4;

/** Test-only seam: crash tests kill the process between delivering and recording. */
export const RELAY_FAULT_HOOK = Symbol('RELAY_FAULT_HOOK');
export interface RelayFaultHook {
  afterDeliveries?(entries: OutboxEntry[]): void | Promise<void>;
}

/** What an attempt's history records beyond its outcome. */
type AttemptFacts = Pick<OutboxOutcome, 'durationMs' | 'outcomeQuery' | 'retryAfterMs'>;

/** How long a request that ignores its abort signal still has to answer, past its timeout. */
const ABORT_GRACE_MS = 50;

/**
 * `task` with a signal that aborts after `ms` (a TimeoutError, as AbortSignal.timeout's), its timer
 * cleared as soon as the task ends: AbortSignal.timeout's own timer cannot be cleared, and fired
 * for every request long after its answer, each time building an exception for nobody (about 30 us
 * of CPU per request). A task that ignores the signal (a destination of an extension's) fails
 * ABORT_GRACE_MS after it: a round must not outlive its lease, or another relay sends its entries
 * meanwhile. The grace lets a task that heeds the signal answer for itself (a timeout's result).
 */
export async function withTimeout<T>(ms: number, task: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const reason = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      controller.abort(reason);
      timer = setTimeout(() => reject(reason), ABORT_GRACE_MS);
    }, ms);
  });
  try {
    return await Promise.race([task(controller.signal), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How long, at a destination's measured pace, a claimed entry may wait in this instance for a
 * request slot while several tenants have entries due there: what a round claims beyond that
 * would hold up the next claim, which takes the next tenant's turn (issue 34).
 */
export const RELAY_QUEUE_TARGET_MS = 25;

/**
 * Caps requests in flight per destination, starts the waiting ones by tenant in turn (first come
 * within a tenant), and sizes what the rounds may claim for it.
 */
class Semaphore {
  private active = 0;
  /** Waiting requests by tenant, each tenant's in arrival order; a Map iterates in insertion order. */
  private readonly waiting = new Map<string, (() => void)[]>();
  private queued = 0;
  /** Requests by tenant, sending or waiting. */
  private readonly byTenant = new Map<string, number>();
  /** Requests claimed for the other tenants past the room (othersRoom), sending or waiting, and what claims for them hold reserved. */
  private aside = 0;
  /** A request's duration here, ms (moving average); undefined until one has finished. */
  private meanMs?: number;
  /** The last claim took entries of one tenant only (or none): nobody else's turn to keep short. */
  solo = true;

  constructor(readonly limit: number) {}

  /**
   * Entries the rounds may hold for this destination, sending or waiting. One tenant alone: two
   * batches (two rounds overlap), the fewest statements per delivery. Several: as many as start
   * within RELAY_QUEUE_TARGET_MS at the measured pace, at least two waves of requests, so the
   * next claim comes soon.
   */
  private get capacity(): number {
    if (this.solo) return Math.max(2 * this.limit, 2 * RELAY_BATCH_SIZE);
    const waves = this.meanMs === undefined ? 2 : Math.floor(RELAY_QUEUE_TARGET_MS / this.meanMs);
    return Math.min(2 * RELAY_BATCH_SIZE, this.limit * Math.max(2, waves));
  }

  /**
   * Entries a round may claim for this destination now. With requests in flight, nothing until a
   * wave's worth of slots (the concurrency) is free: a round costs the same statements whatever
   * its size, and rounds of one or two entries each had cost the drain a quarter of its rate.
   */
  get room(): number {
    const room = Math.max(0, this.capacity - this.active - this.queued);
    return this.active > 0 && room < this.limit ? 0 : room;
  }

  /** A request would start at once. */
  get free(): boolean {
    return this.active < this.limit && this.queued === 0;
  }

  /**
   * Room for the tenants that hold less than a wave here while others fill the room: the tenants
   * holding a wave or more (passed over by that claim) and what is left of one wave for the
   * others, and never more than one wave claimed this way in all (each tenant a claim for others
   * took up to a wave is passed over by the next). Not bounded by the capacity: when a burst
   * begins, overlapping rounds and hand-overs can hold several times the room, and the other
   * tenants' entries would wait for all of it to drain. Undefined when nobody holds that much (the
   * room is theirs already) or that wave is used.
   */
  get othersRoom(): { passedOver: string[]; room: number } | undefined {
    const passedOver: string[] = [];
    let others = 0;
    for (const [tenant, n] of this.byTenant) {
      if (n >= this.limit) passedOver.push(tenant);
      else others += n;
    }
    const room = Math.min(this.limit - others, this.limit - this.aside);
    return passedOver.length > 0 && room > 0 ? { passedOver, room } : undefined;
  }

  /** Requests of `tenant` here, sending or waiting. */
  holds(tenant: string): number {
    return this.byTenant.get(tenant) ?? 0;
  }

  /** Requests of tenants other than `tenant` are here, and `tenant` holds less than a wave. */
  busyWithOthers(tenant: string): boolean {
    const own = this.byTenant.get(tenant) ?? 0;
    return own < this.limit && this.active + this.queued > own;
  }

  /** Holds `n` of the wave othersRoom gave a claim until its requests are queued (then run counts them); a negative `n` gives them back. */
  holdAside(n: number): void {
    this.aside += n;
  }

  /** `aside`: claimed through othersRoom, counted against its wave until it ends. */
  async run<T>(tenant: string, task: () => Promise<T>, aside = false): Promise<T> {
    this.byTenant.set(tenant, (this.byTenant.get(tenant) ?? 0) + 1);
    if (aside) this.aside++;
    if (this.active >= this.limit) {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(tenant);
        if (queue) queue.push(resolve);
        else this.waiting.set(tenant, [resolve]);
        this.queued++;
      });
    } else {
      this.active++;
    }
    const started = performance.now();
    try {
      return await task();
    } finally {
      const ms = performance.now() - started;
      this.meanMs = this.meanMs === undefined ? ms : this.meanMs + (ms - this.meanMs) / 16;
      if (aside) this.aside--;
      const held = this.byTenant.get(tenant)! - 1;
      if (held === 0) this.byTenant.delete(tenant);
      else this.byTenant.set(tenant, held);
      this.startNext();
    }
  }

  /** Hands the freed slot to the first tenant in line, which then goes to the back of the line. */
  private startNext(): void {
    const first = this.waiting.entries().next();
    if (first.done) {
      this.active--;
      return;
    }
    const [tenant, queue] = first.value;
    const next = queue.shift()!;
    this.waiting.delete(tenant);
    if (queue.length > 0) this.waiting.set(tenant, queue);
    this.queued--;
    next();
  }
}

/**
 * A destination's requests that found it down in a row, over every round of this instance (an
 * answer ends the streak). Each round stops starting requests once its own or this streak reaches
 * the circuit's failure count, for a cool-down after the last: rounds that overlap (claimed and
 * handed over) do not each spend that many requests on a destination that is down before the
 * circuit, written when a round ends, says so. Once a round has reported to the circuit (or a
 * cool-down after the last), the circuit decides alone.
 */
interface DownStreak {
  down: number;
  /** When the last of them found it down (the relay's clock, ms); the streak counts for a circuit cool-down after it. */
  lastAt: number;
}

/** What one round has seen of one destination so far: the round stops sending to it as soon as it looks down or asks for a pause. */
class RoundWatch implements RoundTally {
  answered = 0;
  down = 0;
  private downInARow = 0;
  retryAfterMs?: number;
  lastError?: string;
  private pausedUntil = 0;

  constructor(
    private readonly downLimit: number,
    private readonly cooldownMs: number,
    private readonly streak: DownStreak,
  ) {}

  /**
   * Whether the next request may start: not while paused, and not once the last downLimit answers
   * (in this round, or across this relay's rounds) were all "down". An earlier answer in the round
   * does not vouch for the rest: a destination that goes down mid-round stops the round at once.
   */
  mayStart(now: number): boolean {
    const streakDown = this.streak.down >= this.downLimit && now - this.streak.lastAt < this.cooldownMs;
    return now >= this.pausedUntil && this.downInARow < this.downLimit && !streakDown;
  }

  see(result: DeliveryResult, now: number): void {
    if (result.kind === 'retry' && result.down) {
      this.down++;
      this.downInARow++;
      this.streak.down++;
      this.streak.lastAt = now;
      this.lastError = result.error;
    } else if (result.statusCode !== undefined || result.kind === 'delivered') {
      // An answer, including an outcome query's "applied" (no status of a send): the destination is up.
      this.answered++;
      this.downInARow = 0;
      this.streak.down = 0;
    }
    if (result.kind === 'retry' && result.retryAfterMs !== undefined && (result.statusCode === 429 || result.statusCode === 503)) {
      this.retryAfterMs = Math.max(this.retryAfterMs ?? 0, result.retryAfterMs);
      this.pausedUntil = Math.max(this.pausedUntil, now + result.retryAfterMs);
    }
  }
}

/**
 * Delivers outbox entries at least once under their Idempotency-Key, each
 * aggregate's entries in order, each destination within its circuit, pause and
 * rate limit (DestinationGates). A round: admit (what each destination may take),
 * claim (one statement, a lease per row, held rows put back), deliver concurrently
 * with no transaction or lock held, record every outcome in one UPDATE fenced by
 * the lease, report what the answers say about each destination. Safe with any
 * number of relays.
 *
 * Once started by its scheduler, the relay also takes the entries this instance's
 * business transactions write, without claiming them: while it has no backlog, the
 * writer commits them already claimed under a lease of the relay's (handOver) and
 * hands them over after the commit (handedOver); a round then costs the one statement
 * that records its outcomes. If the instance dies first, the lease expires and any
 * relay's claim takes them over, their outcome unknown, as after a crash mid-round.
 */
@Injectable()
export class OutboxRelay implements RelayIntake {
  private readonly logger = new Logger(OutboxRelay.name);
  /** Unique per relay instance, even for two apps in one process. */
  readonly relayId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly limits = new Map<string, Semaphore>();
  private rounds = 0;
  private started = false;
  private stopped = false;
  /** The last claim came back full: claimed rounds drain the backlog before anything is handed over. */
  private backlog = false;
  private readonly handedRounds = new Set<Promise<void>>();
  /** Handed-over rounds of entries waiting for a slot at a busy destination (handOver's `busy`), capped apart. */
  private readonly waitingRounds = new Set<Promise<void>>();
  /** Claimed rounds whose requests are still sending or whose outcomes are not yet recorded. */
  private readonly claimedRounds = new Set<Promise<void>>();
  /** The last round took a destination's whole budget: the scheduler follows it with another at once. */
  private full = false;
  /** Destinations a round found without room (Semaphore.room): the request that makes room there wakes the scheduler. */
  private readonly starved = new Set<string>();
  /** Claims started so far (their numbers). */
  private claims = 0;
  /** By destination, the tenants whose entries this instance's writer left pending, with the number of the last claim started before (caughtUp). */
  private readonly leftPending = new Map<string, Map<string, number>>();
  /** Destinations where this instance's writer left a tenant's entries pending beside other tenants' requests: a claim for them is due (pendingWritten). */
  private readonly others = new Set<string>();
  private readonly streaks = new Map<string, DownStreak>();
  private wakeOnRoom?: () => void;
  /** Entries this relay holds and has not started sending, by id: an erasure's notice re-reads their recipients. */
  private readonly unsent = new Map<string, OutboxEntry>();
  /** Held entries an erasure blanked: settled `dead` ('erased') when their turn comes, never sent. */
  private readonly erased = new Set<string>();
  /** Held entries a failed re-read could not clear: handed back unsent, for a claim that reads them again. */
  private readonly unverified = new Set<string>();
  /** Re-reads in flight: a request waits for them before it starts. */
  private readonly rechecks = new Set<Promise<void>>();
  /**
   * Erasure notices so far. A claim (or a hand-over) whose entries this relay holds only after a
   * notice came re-reads them: the erasure may have committed after the claim did.
   */
  private erasures = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: OutboxRepository,
    private readonly destinations: DestinationRegistry,
    private readonly gates: DestinationGates,
    private readonly clock: Clock,
    private readonly metrics: RelayMetrics,
    private readonly traces: OutboxTraces,
    @Optional() @Inject(RELAY_FAULT_HOOK) private readonly faultHook?: RelayFaultHook,
  ) {}

  /**
   * Scheduled: from now on, the writer may commit entries already claimed for this relay (handOver);
   * `wake` starts a round when a request finishes after a round found no room for a destination.
   */
  start(wake?: () => void): void {
    this.started = true;
    this.wakeOnRoom = wake;
  }

  /** No new hand-over; resolves once the rounds in flight, claimed or handed over, have recorded their outcomes. */
  async stop(): Promise<void> {
    this.stopped = true;
    const rounds = () => [...this.handedRounds, ...this.waitingRounds, ...this.claimedRounds];
    while (rounds().length > 0) await Promise.all(rounds());
  }

  /**
   * A lease for the entries of one business transaction, started and not stopping, for the
   * destinations it would admit without asking their shared row: every tenant's entries where a
   * request would start at once (no backlog to claim, few handed-over rounds in flight), and where
   * requests wait for a slot a caught-up tenant's (`busy`, `takes`). Undefined: the entries are
   * written `pending`, for any relay's claim.
   */
  handOver(): HandOver | undefined {
    if (!this.started || this.stopped) return undefined;
    const now = this.clock.now();
    const unhindered = this.gates.unhindered(now, this.config.relay.leaseMs);
    // Every tenant's entries where requests start at once, unless a backlog is being claimed (it goes
    // first): queued behind others they would hold up the claims, which take their share of the room
    // (Semaphore.room) and serve the tenants in turn.
    const free = this.backlog || this.handedRounds.size >= MAX_HANDED_ROUNDS ? [] : unhindered.filter((name) => this.isFree(name));
    // Elsewhere a caught-up tenant's entry, one per tenant and destination in a transaction: it would
    // wait for a claim, and then for a slot in its turn; handed over, it waits for the slot alone (issue 34).
    const busy =
      this.waitingRounds.size >= MAX_HANDED_ROUNDS
        ? []
        : unhindered.filter((name) => !free.includes(name) && this.limitOf(name) !== undefined);
    if (free.length + busy.length === 0) return undefined;
    const taken = new Set<string>();
    const takes = (destination: string, tenantId: string): boolean => {
      if (free.includes(destination)) return true;
      const key = `${destination}\0${tenantId}`;
      if (taken.has(key) || !this.caughtUp(destination, tenantId)) return false;
      taken.add(key);
      return true;
    };
    return {
      lease: this.nextLease(),
      until: new Date(now.getTime() + this.config.relay.leaseMs),
      destinations: [...free, ...busy],
      ...(busy.length > 0 && { busy, takes }),
      erasures: this.erasures,
    };
  }

  /**
   * At `destination`, `tenantId` has no request here (sending or waiting), and no entry this
   * instance's writer left pending there since a claim took every due entry of its: its entry,
   * handed over, starts at the next free slot in its turn. (It may pass an entry of its own this
   * relay does not know of, deferred or written by another instance, never one of the same order:
   * the insert keeps an order's entries pending behind an undelivered one.)
   */
  private caughtUp(destination: string, tenantId: string): boolean {
    const limit = this.limitOf(destination);
    return limit !== undefined && limit.holds(tenantId) === 0 && !this.leftPending.get(destination)?.has(tenantId);
  }

  /** Entries committed already claimed under `handOver`: sent and recorded as a claimed round's. */
  handedOver(handOver: HandOver, entries: OutboxEntry[]): void {
    if (entries.length === 0) return;
    if (this.stopped) {
      // Its transaction took the hand-over before stop() and committed after it: not sent by an
      // instance on its way out (nor left claimed until the lease ends), but back for any relay's
      // claim; one an erasure blanked meanwhile settles as the holding relay would settle it.
      void this.repository
        .erasedAmong(entries.map((e) => e.id))
        .then((erased) => {
          const back = entries.map((e) =>
            erased.includes(e.id) ? this.erasedOutcome(e) : this.deferred(e, 'deferred: the relay was stopping'),
          );
          return this.repository.record(handOver.lease, this.clock.now(), back);
        })
        .catch((error: Error) => this.logger.warn({ err: error.message }, 'could not hand entries back; their lease expires'));
      return;
    }
    this.hold(entries, handOver.erasures);
    // A busy destination's entries wait for a slot: a round of their own, so that the others' outcomes
    // are recorded as soon as they are sent, not once a slot elsewhere has come.
    const byRound = new Map<string, OutboxEntry[]>(); // '': the destinations where requests start at once
    for (const e of entries) {
      const key = handOver.busy?.includes(e.destination) ? e.destination : '';
      const group = byRound.get(key);
      if (group) group.push(e);
      else byRound.set(key, [e]);
    }
    for (const [key, group] of byRound) {
      const set = key === '' ? this.handedRounds : this.waitingRounds;
      const round: Promise<void> = this.deliver(handOver.lease, handOver.until, group)
        // As when a claimed round fails (the database is down): the lease expires and a claim takes them over.
        .catch((error: Error) => this.logger.error({ err: error.message }, 'relay round failed'))
        .finally(() => set.delete(round));
      set.add(round);
    }
  }

  /**
   * Entries this instance's writer just committed pending. Where other tenants' requests are in
   * flight or waiting at a destination, this tenant's entry would wait for the rounds holding them
   * to end, and where they fill the room, for room too, before a claim could take it in its turn:
   * a round for it starts beside them (claimForOthers), and where the room is full it claims up to
   * a wave for the tenants not filling it, passing those over. Only on the writer's word: a look on
   * every round cost a drain of one tenant's backlog a claim statement per round (issue 34).
   */
  pendingWritten(entries: readonly PendingWrite[]): void {
    for (const { tenantId, destination } of entries) {
      if (!this.others.has(destination) && this.limitOf(destination)?.busyWithOthers(tenantId)) this.others.add(destination);
      if (!this.started) continue;
      const left = this.leftPending.get(destination);
      if (left) left.set(tenantId, this.claims);
      else this.leftPending.set(destination, new Map([[tenantId, this.claims]]));
    }
  }

  /**
   * An erasure committed (OUTBOX_ERASURE_CHANNEL): finds which entries this relay holds unsent
   * had their recipient blanked, so they are never sent from the copy claimed before. A request
   * that starts meanwhile waits for the answer; one already started goes out (operations.md).
   */
  recheckErasures(): Promise<void> {
    this.erasures++;
    return this.reread();
  }

  private reread(): Promise<void> {
    const ids = [...this.unsent.keys()];
    if (ids.length === 0) return Promise.resolve();
    const check: Promise<void> = this.repository
      .erasedAmong(ids)
      .then((found) => {
        for (const id of found) if (this.unsent.has(id)) this.erased.add(id);
      })
      .catch((error: Error) => {
        // Fail closed: none of them goes out from its claimed copy; the next claim reads them as they are now.
        for (const id of ids) if (this.unsent.has(id)) this.unverified.add(id);
        this.logger.error({ err: error.message }, 'could not re-read recipients after an erasure');
      })
      .finally(() => this.rechecks.delete(check));
    this.rechecks.add(check);
    return check;
  }

  /** One round, its requests answered and recorded. Returns how many entries it claimed or held back (0: nothing due, or nothing may go). */
  async runOnce(): Promise<number> {
    const { count, sending } = await this.claimOnce();
    await sending;
    return count;
  }

  /** The writer left entries pending where other tenants hold the requests (pendingWritten): the scheduler runs claimForOthers. */
  get othersWaiting(): boolean {
    return this.others.size > 0;
  }

  /**
   * A round for the destinations where the writer left entries of tenants other than those holding
   * the requests (pendingWritten), beside the rounds in flight, which wait for their slowest request
   * before the next can start: that wait held another tenant's entry, committed meanwhile, out of
   * the claims (issue 34). Resolves once its entries are claimed and queued; stop() waits for their
   * sends and record.
   */
  async claimForOthers(): Promise<number> {
    return (await this.claimOnce(true)).count;
  }

  /**
   * One round's claim (`onlyOthers`: only where pendingWritten asked for one): resolves once its
   * entries are claimed and their requests queued (`count`, as runOnce), while they are sent and
   * recorded (`sending`; stop() waits for it).
   */
  private async claimOnce(onlyOthers = false): Promise<{ count: number; sending: Promise<void> }> {
    // What othersRoom grants is held from the admission until the requests are queued (run counts
    // them from there): the rounds and a claim beside them, in flight at once, do not each take it.
    const reserved = new Map<Semaphore, number>();
    try {
      return await this.claimReserving(onlyOthers, reserved);
    } finally {
      for (const [limit, n] of reserved) limit.holdAside(-n);
    }
  }

  private async claimReserving(onlyOthers: boolean, reserved: Map<Semaphore, number>): Promise<{ count: number; sending: Promise<void> }> {
    const lease = this.nextLease();
    const claim = ++this.claims;
    const { leaseMs } = this.config.relay;
    const passedOver = new Map<string, string[]>();
    // A claim beside the rounds takes every mark at once: a destination it cannot admit (an open
    // circuit) waits for the rounds, and the scheduler does not start it again for that mark.
    const forOthers = onlyOthers ? new Set(this.others) : undefined;
    if (forOthers) this.others.clear();
    const admissions = await this.gates.admit(
      this.clock.now(),
      (name) => {
        if (forOthers && !forOthers.has(name)) return 0;
        const asked = forOthers !== undefined || this.others.delete(name);
        const room = this.room(name);
        if (room === 0) this.starved.add(name);
        // Beside the rounds, at most a wave, and never for the tenants filling the room.
        const limit = this.limitOf(name);
        const others = asked && (room === 0 || onlyOthers) ? limit?.othersRoom : undefined;
        if (others) {
          passedOver.set(name, others.passedOver);
          limit!.holdAside(others.room);
          reserved.set(limit!, (reserved.get(limit!) ?? 0) + others.room);
          return others.room;
        }
        return onlyOthers ? Math.min(room, limit?.limit ?? 0) : room;
      },
      leaseMs,
    );
    const budgets = new Map<string, number>();
    for (const [name, admission] of admissions) if (admission.grant > 0) budgets.set(name, admission.grant);
    if (budgets.size === 0) {
      // Nothing admitted (no room, an open circuit, no tokens): no round at once; a wake, a tick or a poll brings the next.
      if (!onlyOthers) this.full = false;
      return { count: 0, sending: Promise.resolve() };
    }
    const claimedAt = this.clock.now();
    const erasures = this.erasures;
    const { entries, held } = await this.repository.claim(lease, claimedAt, leaseMs, budgets, RELAY_BATCH_SIZE, passedOver);
    // Held from here: an erasure's notice during the statements before the sends re-reads them too.
    this.hold(entries, erasures);
    const claimed = new Map<string, number>();
    /** By destination, the entries claimed per tenant. */
    const tenants = new Map<string, Map<string, number>>();
    for (const e of entries) {
      claimed.set(e.destination, (claimed.get(e.destination) ?? 0) + 1);
      const seen = tenants.get(e.destination);
      if (seen) seen.set(e.tenantId, (seen.get(e.tenantId) ?? 0) + 1);
      else tenants.set(e.destination, new Map([[e.tenantId, 1]]));
    }
    // A claim serves every tenant with due entries in turn: entries of one tenant alone mean no other had any.
    // A claim for the others saw only some of them: it says only that there are several.
    for (const name of budgets.keys()) {
      const several = passedOver.has(name) || (tenants.get(name)?.size ?? 0) > 1;
      if (!onlyOthers || several) this.solo(name, !several);
    }
    // The tenants left pending before this claim that it caught up: those it neither passed over nor
    // left due entries behind for.
    for (const [name, budget] of budgets) {
      const left = this.leftPending.get(name);
      if (!left) continue;
      const behind = leftBehind(tenants.get(name) ?? new Map<string, number>(), (claimed.get(name) ?? 0) >= budget);
      for (const [tenant, since] of left)
        if (since < claim && !passedOver.get(name)?.includes(tenant) && !behind.has(tenant)) left.delete(tenant);
    }
    // What the rounds' claims found decides the backlog and the next round, not a claim beside them.
    const full = onlyOthers
      ? this.backlog
      : held.length >= RELAY_BATCH_SIZE || [...budgets].some(([name, budget]) => (claimed.get(name) ?? 0) >= budget);
    this.backlog = full;
    try {
      await this.gates.giveBack(admissions, claimed);
    } catch (error) {
      // Not sent: their lease expires and a claim takes them over.
      for (const e of entries) this.unsent.delete(e.id);
      throw error;
    }
    for (const h of held) this.metrics.heldBack(h.destination);
    // Read by the scheduler as this round ends (an overlapping round's claim may have written it meanwhile).
    if (!onlyOthers) this.full = full;
    const count = entries.length + held.length;
    if (entries.length === 0) return { count, sending: Promise.resolve() };
    const sending = this.deliver(lease, new Date(claimedAt.getTime() + leaseMs), entries, new Set(passedOver.keys()));
    // As when a handed-over round fails (the database is down): the lease expires and a claim takes them over.
    const round: Promise<void> = sending
      .catch((error: Error) => this.logger.error({ err: error.message }, 'relay round failed'))
      .finally(() => this.claimedRounds.delete(round));
    this.claimedRounds.add(round);
    return { count, sending };
  }

  /**
   * Entries claimed by (or handed over to) this relay, not yet sent: what an erasure's notice
   * re-reads. `erasures`: the count of notices when their claim started; one that came since may
   * be of an erasure that committed after the claim, so they are re-read now.
   */
  private hold(entries: OutboxEntry[], erasures: number): void {
    for (const e of entries) this.unsent.set(e.id, e);
    if (entries.length > 0 && this.erasures !== erasures) void this.reread();
  }

  /** A token per round, not per instance: two overlapping rounds must not pass each other's fence. */
  private nextLease(): string {
    return `${this.relayId}:${++this.rounds}`;
  }

  /**
   * Sends the entries claimed under `lease` (its end: `leaseEnd`) concurrently, with no transaction
   * or lock held, records every outcome in one fenced statement, and reports what the answers say
   * about each destination. `asideAt`: the destinations where they were claimed for the other
   * tenants past the room (Semaphore.othersRoom).
   */
  private async deliver(lease: string, leaseEnd: Date, entries: OutboxEntry[], asideAt?: ReadonlySet<string>): Promise<void> {
    // Past this point a request (an outcome query and a send) could still be in flight when another
    // relay takes the lease over, and it would send the same entry: what has not started by then waits
    // for the next round instead. From the lease's own end (its locked_until), not from when the
    // claim returned, which includes the wait for a pooled connection; less the skew of the other
    // relay's clock, which may see the lease end that much early.
    const sendBy = leaseEnd.getTime() - clockSkewAllowanceMs(this.config) - 2 * this.config.relay.timeoutMs;
    const watches = new Map<string, RoundWatch>();
    const trace = this.traces.begin(entries);
    try {
      const outcomes = await Promise.all(
        entries.map((entry) => {
          const watch = this.watch(watches, entry.destination);
          const aside = asideAt?.has(entry.destination) ?? false;
          return trace
            ? trace.during(entry, () => this.attempt(entry, sendBy, watch, aside, trace))
            : this.attempt(entry, sendBy, watch, aside);
        }),
      );
      await this.faultHook?.afterDeliveries?.(entries);
      const recorded = await this.repository.record(lease, this.clock.now(), outcomes);
      for (const [destination, watch] of watches) {
        await this.gates.report(destination, this.clock.now(), watch);
        // The circuit has this round's answers now: from here it decides, not the streak.
        this.streaks.get(destination)!.down = 0;
      }
      for (const [i, outcome] of outcomes.entries()) {
        const entry = entries[i];
        const lost = !recorded.has(outcome.id);
        const counted = lost ? 'lost_lease' : outcome.status === 'pending' ? (outcome.deferred ? 'deferred' : 'retry') : outcome.status;
        this.metrics.outcome(entry.destination, counted);
        if (trace) {
          trace.recorded(entry, counted, outcome.statusCode);
          trace.during(entry, () => this.report(entry, outcome, lost));
        } else {
          this.report(entry, outcome, lost);
        }
      }
    } finally {
      trace?.end();
    }
  }

  private report(entry: OutboxEntry, outcome: OutboxOutcome, lost: boolean): void {
    const fields = { operationKey: entry.operationKey, destination: entry.destination, attempt: entry.attempts };
    if (lost) {
      this.logger.warn(fields, 'lease lost before recording; another relay owns this entry now');
    } else if (outcome.status === 'dead' || outcome.status === 'unresolved') {
      this.logger.error({ ...fields, status: outcome.status, error: outcome.lastError }, `outbox entry ${outcome.status}`);
    } else if (outcome.status === 'pending' && !outcome.deferred) {
      this.logger.warn({ ...fields, error: outcome.lastError, nextAttemptAt: outcome.nextAttemptAt }, 'delivery failed; will retry');
    }
  }

  private watch(watches: Map<string, RoundWatch>, name: string): RoundWatch {
    let watch = watches.get(name);
    if (!watch) {
      let streak = this.streaks.get(name);
      if (!streak) this.streaks.set(name, (streak = { down: 0, lastAt: 0 }));
      const circuit = this.destinations.get(name)?.settings.circuit;
      watches.set(name, (watch = new RoundWatch(circuit?.failures ?? 1, circuit?.cooldownMs ?? 0, streak)));
    }
    return watch;
  }

  private async attempt(entry: OutboxEntry, sendBy: number, watch: RoundWatch, aside: boolean, trace?: RoundTrace): Promise<OutboxOutcome> {
    const destination = this.destinations.get(entry.destination);
    if (!destination) {
      // Only registered destinations are claimed; kept for safety, bounded by the attempt limit.
      this.unsent.delete(entry.id);
      return this.outcome(entry, { kind: 'retry', error: `no destination "${entry.destination}"`, outcomeUnknown: false });
    }
    const limit = this.limit(entry.destination, destination);
    const facts: AttemptFacts = {};
    try {
      const result = await limit.run(
        entry.tenantId,
        async () => {
          // Held (and so in every re-read that starts) until each re-read in flight has answered for it.
          while (this.rechecks.size > 0) await Promise.all(this.rechecks);
          this.unsent.delete(entry.id);
          if (this.erased.has(entry.id)) return ERASED;
          if (this.unverified.has(entry.id)) return 'deferred: its recipient could not be re-read after an erasure';
          const now = this.clock.now().getTime();
          if (now > sendBy) return 'deferred: the round ran out of lease time';
          if (!watch.mayStart(now)) return 'deferred: the destination looked down or asked for a pause in this round';
          const answer = await this.resolveThenDeliver(entry, destination, facts, trace);
          watch.see(answer, this.clock.now().getTime());
          return answer;
        },
        aside,
      );
      if (typeof result === 'string') return this.deferred(entry, result);
      if (result === ERASED) return this.erasedOutcome(entry);
      return Object.assign(this.outcome(entry, result), facts);
    } catch (error) {
      // A destination bug must not stall the batch; the entry stays uncertain. A request past its
      // timeout that ignored the abort (withTimeout's TimeoutError) is the destination not answering:
      // down for the circuit, as an HTTP timeout is. Any other exception is not: one tenant's
      // malformed entries must not open the destination's circuit for every tenant.
      const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
      const result = {
        kind: 'retry' as const,
        error: `destination error: ${(error as Error).message}`,
        outcomeUnknown: true,
        down: timedOut,
      };
      if (timedOut) watch.see(result, this.clock.now().getTime());
      return Object.assign(this.outcome(entry, result), facts);
    } finally {
      this.unsent.delete(entry.id);
      this.erased.delete(entry.id);
      this.unverified.delete(entry.id);
      if (this.starved.has(entry.destination) && this.room(entry.destination) > 0) {
        this.starved.delete(entry.destination);
        this.wakeOnRoom?.();
      }
    }
  }

  /**
   * An entry whose last attempt may have reached the destination is first
   * checked with the outcome query: applied -> delivered without a resend;
   * cannot tell -> retry later. Destinations without a query get a resend
   * under the same key and dedupe it themselves.
   */
  private async resolveThenDeliver(
    entry: OutboxEntry,
    destination: Destination,
    facts: AttemptFacts,
    trace?: RoundTrace,
  ): Promise<DeliveryResult> {
    const started = performance.now();
    try {
      const lastChance = entry.attempts > this.config.relay.maxAttempts;
      if (entry.outcomeUnknown && destination.queryOutcome) {
        let known: OperationOutcome;
        const span = trace?.queryStarted(entry);
        try {
          known = await withTimeout(this.config.relay.timeoutMs, (signal) =>
            destination.queryOutcome!(entry.operationKey, { signal, traceparent: span && traceparentOf(span) }),
          );
        } catch (error) {
          known = 'unknown';
        }
        if (span) trace!.queryEnded(span, known);
        facts.outcomeQuery = known;
        if (known === 'applied') return { kind: 'delivered' };
        if (known === 'unknown') return { kind: 'retry', error: 'outcome query failed', outcomeUnknown: true, down: true };
      }
      // A crashed relay used up the last attempt: do not send past the limit.
      if (lastChance) return { kind: 'retry', error: 'attempt limit reached', outcomeUnknown: entry.outcomeUnknown };
      const result = await withTimeout(this.config.relay.timeoutMs, (signal) =>
        destination.deliver(entry, { signal, traceparent: trace?.traceparent(entry) }),
      );
      if (result.kind === 'retry' && result.retryAfterMs !== undefined) facts.retryAfterMs = result.retryAfterMs;
      return result;
    } finally {
      facts.durationMs = performance.now() - started;
    }
  }

  /** Not sent: due again at once, and the claim's attempt does not count. */
  private deferred(entry: OutboxEntry, why: string): OutboxOutcome {
    return {
      id: entry.id,
      attempts: entry.attempts,
      status: 'pending',
      nextAttemptAt: this.clock.now(),
      lastError: why,
      outcomeUnknown: entry.outcomeUnknown,
      deferred: true,
    };
  }

  /** Not sent, ever: its recipient was erased while this relay held it. No attempt counts; an earlier attempt's unknown outcome stays on record. */
  private erasedOutcome(entry: OutboxEntry): OutboxOutcome {
    return {
      id: entry.id,
      attempts: entry.attempts,
      status: 'dead',
      lastError: 'erased',
      outcomeUnknown: entry.outcomeUnknown,
      deferred: true,
    };
  }

  private outcome(entry: OutboxEntry, result: DeliveryResult): OutboxOutcome {
    // Object.assign onto a fresh object: a spread followed by more keys costs more, once per entry.
    const base = { id: entry.id, attempts: entry.attempts, statusCode: result.statusCode };
    if (result.kind === 'delivered') return Object.assign(base, { status: 'delivered' as const, outcomeUnknown: false });
    if (result.kind === 'dead') return Object.assign(base, { status: 'dead' as const, lastError: result.error, outcomeUnknown: false });
    // A known "not applied" now does not erase an earlier unknown outcome unless this attempt was actually sent.
    const outcomeUnknown = result.outcomeUnknown || (entry.outcomeUnknown && result.statusCode === undefined);
    if (entry.attempts >= this.config.relay.maxAttempts) {
      return Object.assign(base, { status: 'unresolved' as const, lastError: result.error, outcomeUnknown });
    }
    const delay = retryDelayMs(entry.attempts, this.config.retry, result.retryAfterMs);
    const nextAttemptAt = new Date(this.clock.now().getTime() + delay);
    return Object.assign(base, { status: 'pending' as const, nextAttemptAt, lastError: result.error, outcomeUnknown });
  }

  /** How many entries of `name` a round may claim: a batch at most, and no more than its requests' room (Semaphore.room). */
  private room(name: string): number {
    return Math.min(RELAY_BATCH_SIZE, this.limitOf(name)?.room ?? RELAY_BATCH_SIZE);
  }

  private solo(name: string, solo: boolean): void {
    const limit = this.limitOf(name);
    if (limit) limit.solo = solo;
  }

  private limitOf(name: string): Semaphore | undefined {
    const destination = this.destinations.get(name);
    return destination && this.limit(name, destination);
  }

  private isFree(name: string): boolean {
    return this.limitOf(name)?.free ?? false;
  }

  /**
   * The last round took a destination's whole budget: more may be due at once. Not after a round
   * that was admitted nothing, which would only ask again at once, in a loop, until room frees.
   */
  get behind(): boolean {
    return this.full;
  }

  private limit(name: string, destination: Destination): Semaphore {
    let limit = this.limits.get(name);
    if (!limit) this.limits.set(name, (limit = new Semaphore(Math.max(1, destination.settings.concurrency))));
    return limit;
  }
}
