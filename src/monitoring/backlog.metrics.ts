import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { Clock } from '../common/clock';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { InboxBacklog } from '../inbox/inbox.types';
import { KeyLimitState, WorkerLimits } from '../inbox/worker-limits';
import { OutboxAdminService } from '../outbox/outbox-admin.service';
import { DestinationStateRow, OutboxBacklog } from '../outbox/outbox.types';
import { MetricsRegistry } from '../observability/metrics.registry';

/** Scrapes within this window share one set of backlog queries. */
export const BACKLOG_CACHE_MS = 1_000;

interface Snapshot {
  at: number;
  inbox: InboxBacklog;
  outbox: OutboxBacklog;
  destinations: DestinationStateRow[];
  workerLimits: KeyLimitState[];
}

/**
 * Backlog gauges computed at scrape time from the database, so every instance
 * reports the shared truth (not what it happened to see). Two cheap queries
 * (partial indexes, open rows only) per scrape, cached for BACKLOG_CACHE_MS.
 */
@Injectable()
export class BacklogMetrics {
  private cached?: { at: number; value: Promise<Snapshot> };

  constructor(
    registry: MetricsRegistry,
    private readonly inbox: InboxAdminService,
    private readonly outbox: OutboxAdminService,
    private readonly clock: Clock,
    private readonly limits: WorkerLimits,
  ) {
    const self = this;
    new Gauge({
      name: 'webhook_inbox_backlog',
      help: 'Inbox rows by open status (pending, processing, quarantined)',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const { inbox } = await self.snapshot();
        this.set({ status: 'pending' }, inbox.pending);
        this.set({ status: 'processing' }, inbox.processing);
        this.set({ status: 'quarantined' }, inbox.quarantined);
      },
    });
    new Gauge({
      name: 'webhook_inbox_oldest_pending_age_seconds',
      help: 'Age of the oldest pending inbox row since it was accepted, early events waiting for an earlier one left out (0 when none)',
      registers: [registry],
      async collect() {
        const s = await self.snapshot();
        this.set(age(s.at, s.inbox.oldestPendingReceivedAt));
      },
    });
    new Gauge({
      name: 'webhook_inbox_waiting',
      help: 'Pending inbox rows that are early events waiting for an earlier one (a refund for its payment), counted in the pending backlog too',
      registers: [registry],
      async collect() {
        this.set((await self.snapshot()).inbox.waiting);
      },
    });
    new Gauge({
      name: 'webhook_inbox_quarantined',
      help: 'Inbox rows waiting for an operator',
      registers: [registry],
      async collect() {
        this.set((await self.snapshot()).inbox.quarantined);
      },
    });
    new Gauge({
      name: 'outbox_backlog',
      help: 'Outbox entries by open status (pending, delivering, unresolved, dead), and held: the pending ones waiting for an earlier entry of their aggregate',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const { outbox } = await self.snapshot();
        for (const status of ['pending', 'held', 'delivering', 'unresolved', 'dead'] as const) this.set({ status }, outbox[status]);
      },
    });
    new Gauge({
      name: 'outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest pending outbox entry since it was written (0 when none)',
      registers: [registry],
      async collect() {
        const s = await self.snapshot();
        this.set(age(s.at, s.outbox.oldestPendingCreatedAt));
      },
    });
    new Gauge({
      name: 'outbox_destination_circuit',
      help: "1 for each destination's current circuit state (closed, open, half_open), shared by all relay instances",
      labelNames: ['destination', 'state'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const d of (await self.snapshot()).destinations) {
          for (const state of ['closed', 'open', 'half_open']) this.set({ destination: d.destination, state }, d.circuit === state ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'outbox_destination_paused_seconds',
      help: 'Seconds left of the pause a destination asked for with Retry-After (0 when none)',
      labelNames: ['destination'],
      registers: [registry],
      async collect() {
        this.reset();
        const s = await self.snapshot();
        for (const d of s.destinations) {
          this.set({ destination: d.destination }, d.paused_until ? Math.max(0, (d.paused_until.getTime() - s.at) / 1000) : 0);
        }
      },
    });
    const limitGauge = (name: string, help: string, value: (k: KeyLimitState) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['kind', 'name'],
        registers: [registry],
        async collect() {
          this.reset();
          for (const k of (await self.snapshot()).workerLimits) {
            const v = value(k);
            if (v !== undefined) this.set({ kind: k.kind, name: k.name }, v);
          }
        },
      });
    limitGauge(
      'webhook_worker_limit_in_flight',
      'Events processing now of a tenant or endpoint with a worker limit, on every instance',
      (k) => k.inFlight,
    );
    limitGauge('webhook_worker_limit_concurrency', "A limited tenant's or endpoint's concurrency limit", (k) => k.concurrency);
    limitGauge(
      'webhook_worker_limit_due',
      'Pending events due now of a tenant or endpoint with a worker limit (counted up to 100,000)',
      (k) => k.due,
    );
    limitGauge(
      'webhook_worker_limit_tokens',
      "Events a rate-limited tenant or endpoint may start now (its rate's tokens)",
      (k) => k.tokens,
    );
    new Gauge({
      name: 'outbox_unresolved',
      help: 'Outbox entries whose outcome an operator must decide',
      registers: [registry],
      async collect() {
        this.set((await self.snapshot()).outbox.unresolved);
      },
    });
  }

  /** One snapshot per cache window (by the injected clock); a failed query is not cached. */
  snapshot(): Promise<Snapshot> {
    const now = this.clock.now().getTime();
    const cached = this.cached;
    if (cached && now >= cached.at && now - cached.at < BACKLOG_CACHE_MS) return cached.value;
    const value = Promise.all([
      this.inbox.backlog(),
      this.outbox.backlog(),
      this.outbox.destinationStates(),
      this.limits.state(undefined),
    ]).then(([inbox, outbox, destinations, workerLimits]) => ({ at: now, inbox, outbox, destinations, workerLimits }));
    const entry = { at: now, value };
    this.cached = entry;
    value.catch(() => {
      if (this.cached === entry) this.cached = undefined;
    });
    return value;
  }
}

function age(nowMs: number, since: Date | null): number {
  return since ? Math.max(0, (nowMs - since.getTime()) / 1000) : 0;
}
