import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { Clock } from '../common/clock';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { InboxBacklog } from '../inbox/inbox.types';
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
      help: 'Age of the oldest pending inbox row since it was accepted (0 when none)',
      registers: [registry],
      async collect() {
        const s = await self.snapshot();
        this.set(age(s.at, s.inbox.oldestPendingReceivedAt));
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
    const value = Promise.all([this.inbox.backlog(), this.outbox.backlog(), this.outbox.destinationStates()]).then(
      ([inbox, outbox, destinations]) => ({ at: now, inbox, outbox, destinations }),
    );
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
