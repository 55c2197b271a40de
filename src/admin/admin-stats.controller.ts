import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Clock } from '../common/clock';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { WorkerLimits } from '../inbox/worker-limits';
import { OutboxAdminService } from '../outbox/outbox-admin.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { AdminPrincipal, scopeOf } from './admin-auth';
import { CurrentAdmin, TenantScoped } from './roles.decorator';
import { ApiAdmin, ApiZodResponse } from './api-docs';
import { stats } from './admin.responses';

const LATENCY_WINDOW_MS = 3_600_000;
/** The window of the rates (per minute) and of "accepted" per endpoint. */
const RATE_WINDOW_MS = 300_000;

@ApiTags('admin: stats')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@TenantScoped()
@Controller('admin/stats')
export class AdminStatsController {
  constructor(
    private readonly inbox: InboxAdminService,
    private readonly outbox: OutboxAdminService,
    private readonly clock: Clock,
    private readonly limits: WorkerLimits,
  ) {}

  @Get()
  @ApiOperation({
    summary:
      'Backlog, oldest pending age, attempts, recurring failures, accept-to-done latency (last hour), rates and open work per endpoint (last 5 minutes), and the worker limits of tenants and endpoints',
  })
  @ApiZodResponse(200, stats)
  async stats(@CurrentAdmin() who: AdminPrincipal) {
    const now = this.clock.now();
    const rateSince = new Date(now.getTime() - RATE_WINDOW_MS);
    const [inbox, outbox, activity, delivered, workerLimits] = await Promise.all([
      this.inbox.stats(new Date(now.getTime() - LATENCY_WINDOW_MS), scopeOf(who)),
      this.outbox.stats(scopeOf(who)),
      this.inbox.activitySince(rateSince, scopeOf(who)),
      this.outbox.deliveredSince(rateSince, scopeOf(who)),
      this.limits.state(scopeOf(who)),
    ]);
    const perMinute = (n: number) => n / (RATE_WINDOW_MS / 60_000);
    return {
      at: now,
      inbox: {
        byStatus: inbox.byStatus,
        oldestPendingAgeSeconds: ageSeconds(now, inbox.oldestPendingReceivedAt),
        waiting: inbox.waiting,
        quarantined: inbox.byStatus.quarantined ?? 0,
        retrying: inbox.retrying,
        maxAttempts: inbox.maxAttempts,
        recurringFailures: inbox.recurringFailures,
        acceptToDoneSeconds: { window: '1h' as const, ...inbox.latency },
      },
      outbox: {
        byStatus: outbox.byStatus,
        oldestPendingAgeSeconds: ageSeconds(now, outbox.oldestPendingCreatedAt),
        unresolved: outbox.byStatus.unresolved ?? 0,
        dead: outbox.byStatus.dead ?? 0,
        recurringFailures: outbox.recurringFailures,
      },
      rates: {
        windowSeconds: RATE_WINDOW_MS / 1000,
        acceptedPerMinute: perMinute(activity.accepted),
        donePerMinute: perMinute(activity.done),
        deliveredPerMinute: perMinute(delivered),
      },
      byEndpoint: activity.byEndpoint.map(({ accepted, ...open }) => ({ ...open, acceptedPerMinute: perMinute(accepted) })),
      workerLimits,
    };
  }
}

export function ageSeconds(now: Date, since: Date | null): number {
  return since ? Math.max(0, (now.getTime() - since.getTime()) / 1000) : 0;
}
