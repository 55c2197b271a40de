import { Injectable, Logger } from '@nestjs/common';
import { ActivityCount } from '../common/activity';
import { Clock } from '../common/clock';
import { TenantScope } from '../common/tenant-scope';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { OutboxAdminService } from '../outbox/outbox-admin.service';
import { MaintenanceJob } from '../retention/maintenance-job.scheduler';
import { ActivityRepository } from './activity.repository';
import { ActivityKind, ActivityWindow, SeriesPoint, WINDOWS } from './activity.types';

const MINUTE_MS = 60_000;
/** A first run (or one after a long outage) starts this far back. */
export const ROLLUP_BACKFILL_MS = 3_600_000;
/** Minutes per round; a capped round is followed by the next at once. */
export const ROLLUP_MAX_SPAN_MS = 60 * MINUTE_MS;
/**
 * Each round counts the last closed minutes again: an attempt is stamped when it
 * started and commits with its outcome, up to a delivery timeout later.
 */
export const ROLLUP_RECOUNT_MS = 2 * MINUTE_MS;
/** Kept a day longer than the longest chart window. */
export const ROLLUP_KEEP_MS = WINDOWS['7d'].ms + 86_400_000;

const ZERO: Record<ActivityCount, number> = { accepted: 0, done: 0, quarantined: 0, delivered: 0, failed: 0 };

export interface SeriesAnswer {
  window: ActivityWindow;
  stepSeconds: number;
  from: Date;
  to: Date;
  /** Accepted, done, quarantined per bucket and the inbox backlog, of `endpoint` (all when unset). */
  inbox: SeriesPoint[];
  /** Delivered and failed attempts per bucket and the outbox backlog, of `destination` (all when unset). */
  outbox: SeriesPoint[];
  endpoints: string[];
  destinations: string[];
}

/**
 * The console's time series. The maintenance role rolls the source tables up into
 * one row per minute, scope and tenant (`runOnce`); charts read those rows, so a
 * week's chart costs the same whatever the traffic was.
 */
@Injectable()
export class ActivityService implements MaintenanceJob {
  private readonly logger = new Logger(ActivityService.name);

  constructor(
    private readonly repository: ActivityRepository,
    private readonly inbox: InboxAdminService,
    private readonly outbox: OutboxAdminService,
    private readonly clock: Clock,
  ) {}

  /** One round: counts of the closed minutes since the cursor (at most an hour), the backlog now, their hours, old rows dropped. */
  async runOnce(): Promise<{ capped: boolean; minutes: number }> {
    const now = this.clock.now();
    const currentMinute = floorMinute(now);
    const rolledTo = await this.repository.rolledTo();
    const from = new Date(Math.max(rolledTo ? rolledTo.getTime() - ROLLUP_RECOUNT_MS : 0, currentMinute.getTime() - ROLLUP_BACKFILL_MS));
    const to = new Date(Math.min(currentMinute.getTime(), from.getTime() + ROLLUP_MAX_SPAN_MS));
    const [events, deliveries, inboxBacklog, outboxBacklog] = await Promise.all([
      this.inbox.activityByMinute(from, to),
      this.outbox.deliveriesByMinute(from, to),
      this.inbox.backlogByEndpoint(),
      this.outbox.backlogByDestination(),
    ]);
    await this.repository.writeCounts(
      [
        ...events.map((minute) => ({ kind: 'endpoint' as const, minute })),
        ...deliveries.map((minute) => ({ kind: 'destination' as const, minute })),
      ],
      to,
    );
    await this.repository.writeBacklog(now, currentMinute, [
      ...inboxBacklog.map((backlog) => ({ kind: 'endpoint' as const, backlog })),
      ...outboxBacklog.map((backlog) => ({ kind: 'destination' as const, backlog })),
    ]);
    await this.repository.rollHours(from, new Date(currentMinute.getTime() + MINUTE_MS));
    await this.repository.deleteBefore(new Date(currentMinute.getTime() - ROLLUP_KEEP_MS));
    const minutes = (to.getTime() - from.getTime()) / MINUTE_MS;
    this.logger.debug({ from, to, minutes }, 'activity rollup');
    return { capped: to.getTime() < currentMinute.getTime(), minutes };
  }

  /** A chart's buckets, every one present (zeros where nothing happened), of the caller's tenants only. */
  async series(window: ActivityWindow, filter: { endpoint?: string; destination?: string }, tenants: TenantScope): Promise<SeriesAnswer> {
    const { ms, stepSeconds } = WINDOWS[window];
    const to = new Date(floorMinute(this.clock.now()).getTime() + MINUTE_MS);
    const from = new Date(to.getTime() - ms);
    const read = (kind: ActivityKind, scope: string | undefined) =>
      this.repository.series(kind, from, to, scope, tenants, stepSeconds).then((points) => fill(points, from, to, stepSeconds));
    const [inbox, outbox, endpoints, destinations] = await Promise.all([
      read('endpoint', filter.endpoint),
      read('destination', filter.destination),
      this.repository.scopes('endpoint', from, to, tenants),
      this.repository.scopes('destination', from, to, tenants),
    ]);
    return { window, stepSeconds, from, to, inbox, outbox, endpoints, destinations };
  }
}

function floorMinute(d: Date): Date {
  return new Date(Math.floor(d.getTime() / MINUTE_MS) * MINUTE_MS);
}

/** Every bucket of [from, to): the stored ones, and empty ones between them. */
export function fill(points: SeriesPoint[], from: Date, to: Date, stepSeconds: number): SeriesPoint[] {
  const byTime = new Map(points.map((p) => [p.at.getTime(), p]));
  const out: SeriesPoint[] = [];
  for (let t = from.getTime(); t < to.getTime(); t += stepSeconds * 1000) {
    out.push(byTime.get(t) ?? { at: new Date(t), counts: { ...ZERO }, backlog: null, oldestPendingAgeSeconds: null });
  }
  return out;
}
