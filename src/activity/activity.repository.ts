import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ActivityCount, ScopeBacklog, ScopeMinute } from '../common/activity';
import { TenantScope } from '../common/tenant-scope';
import { runInTransaction } from '../database/unit-of-work';
import {
  ADVANCE_ROLLED_TO,
  DELETE_BEFORE,
  ROLL_HOURS,
  ROLLED_TO,
  SCOPES,
  SERIES_BY_HOUR,
  SERIES_BY_MINUTE,
  UPSERT_BACKLOG,
  UPSERT_COUNTS,
} from './activity.queries';
import { ActivityKind, SeriesPoint } from './activity.types';

const COUNTS: ActivityCount[] = ['accepted', 'done', 'quarantined', 'delivered', 'failed'];

type SeriesRow = Record<ActivityCount, number> & { bucket: Date; backlog: number | null; oldest: number | null };

/** The activity module's tables: `activity_minutes` and its cursor. */
@Injectable()
export class ActivityRepository {
  constructor(private readonly dataSource: DataSource) {}

  async rolledTo(): Promise<Date | null> {
    const rows: { rolled_to: Date }[] = await this.dataSource.query(ROLLED_TO);
    return rows[0]?.rolled_to ?? null;
  }

  /** The minutes' counts and the cursor, in one transaction: a crash leaves both or neither. */
  async writeCounts(rows: { kind: ActivityKind; minute: ScopeMinute }[], rolledTo: Date): Promise<void> {
    await runInTransaction(this.dataSource, async (tx) => {
      if (rows.length > 0) {
        const column = (f: (r: (typeof rows)[number]) => unknown) => rows.map(f);
        await tx.query(UPSERT_COUNTS, [
          column((r) => r.minute.minute),
          column((r) => r.kind),
          column((r) => r.minute.scope),
          column((r) => r.minute.tenantId),
          ...COUNTS.map((c) => column((r) => r.minute.counts[c] ?? 0)),
        ]);
      }
      await tx.query(ADVANCE_ROLLED_TO, [rolledTo]);
    });
  }

  /** The backlog seen at `seenAt`, as its minute's. */
  async writeBacklog(seenAt: Date, minute: Date, rows: { kind: ActivityKind; backlog: ScopeBacklog }[]): Promise<void> {
    if (rows.length === 0) return;
    const at = seenAt.getTime();
    await this.dataSource.query(UPSERT_BACKLOG, [
      minute,
      rows.map((r) => r.kind),
      rows.map((r) => r.backlog.scope),
      rows.map((r) => r.backlog.tenantId),
      rows.map((r) => r.backlog.backlog),
      rows.map((r) => (r.backlog.oldestPendingAt ? Math.max(0, Math.round((at - r.backlog.oldestPendingAt.getTime()) / 1000)) : 0)),
    ]);
  }

  /** The hourly rows of the hours that [from, to) touches, from their minutes. */
  async rollHours(from: Date, to: Date): Promise<void> {
    await this.dataSource.query(ROLL_HOURS, [from, to]);
  }

  async deleteBefore(minute: Date): Promise<void> {
    await this.dataSource.query(DELETE_BEFORE, [minute]);
  }

  async series(
    kind: ActivityKind,
    from: Date,
    to: Date,
    scope: string | undefined,
    tenants: TenantScope,
    stepSeconds: number,
  ): Promise<SeriesPoint[]> {
    // Hourly buckets read the hourly rows: a week is 168 rows per scope.
    const rows: SeriesRow[] = await this.dataSource.query(stepSeconds >= 3600 ? SERIES_BY_HOUR : SERIES_BY_MINUTE, [
      kind,
      from,
      to,
      scope ?? null,
      tenants ?? null,
      stepSeconds,
    ]);
    return rows.map((r) => ({
      at: r.bucket,
      counts: Object.fromEntries(COUNTS.map((c) => [c, r[c]])) as Record<ActivityCount, number>,
      backlog: r.backlog,
      oldestPendingAgeSeconds: r.oldest,
    }));
  }

  async scopes(kind: ActivityKind, from: Date, to: Date, tenants: TenantScope): Promise<string[]> {
    const rows: { scope: string }[] = await this.dataSource.query(SCOPES, [kind, from, to, tenants ?? null]);
    return rows.map((r) => r.scope);
  }
}
