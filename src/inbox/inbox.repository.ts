import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { queryPrepared, queryPreparedIn } from '../database/prepared-statement';
import { acceptMany, CLAIM, DELETE_IDENTITIES, FINISH, FINISH_MANY, PURGE_PAYLOADS, RECORD_FAILURE } from './inbox.queries';
import {
  ADMIN_BACKLOG,
  ADMIN_LOCK,
  ADMIN_QUARANTINE,
  ADMIN_REPLAY,
  ADMIN_STATS_ATTEMPTS,
  ADMIN_STATS_BY_STATUS,
  ADMIN_STATS_FAILURES,
  ADMIN_STATS_LATENCY,
  ADMIN_VIEW_COLUMNS,
  adminReplayBatch,
} from './inbox.queries';
import { microsExpr, Page, PageRequest, SqlWhere, toPage } from '../common/pagination';
import { InboxBacklog, InboxEventView, InboxFilter, InboxStats, InboxStatusChange } from './inbox.types';
import { AcceptRequest, AcceptResult, InboxEvent, InboxStatus } from './inbox.types';

interface AcceptRow {
  id: string;
  source_scope: string;
  event_id: string;
  inserted: boolean;
  status: InboxStatus;
  payload_sha256: string;
}

/** The event identity: what the unique constraint says is "the same event". */
export function identity(r: { sourceScope: string; eventId: string }): string {
  return `${r.sourceScope}\u0000${r.eventId}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The columns every inbox read starts with: which event, from where. */
interface IdentityRow {
  id: string;
  source_scope: string;
  event_id: string;
  tenant_id: string;
  provider: string;
  endpoint_id: string;
  event_type: string;
}

interface EventRow extends IdentityRow {
  payload: unknown;
  attempts: number;
  received_at: Date;
}

/** The only owner of `webhook_inbox` SQL. */
@Injectable()
export class InboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * One autocommit multi-row statement: when it resolves, every row is durably
   * committed. Rows are sorted by identity so concurrent batches lock in one order.
   * Results come back in the order of `requests`; identities must be distinct.
   */
  async acceptMany(requests: AcceptRequest[]): Promise<AcceptResult[]> {
    const sorted = [...requests].sort((a, b) => compare(identity(a), identity(b)));
    const values = sorted.flatMap((r) => [
      r.sourceScope,
      r.eventId,
      r.tenantId,
      r.provider,
      r.endpointId,
      r.eventType,
      r.payloadJson,
      r.payloadSha256,
      r.verifiedWith,
      r.status,
      r.statusReason ?? null,
    ]);
    // One prepared statement per batch size.
    const rows = await queryPrepared<AcceptRow>(this.dataSource, `inbox_accept_${sorted.length}`, acceptMany(sorted.length), values);
    const byIdentity = new Map(rows.map((row) => [identity({ sourceScope: row.source_scope, eventId: row.event_id }), row]));
    return requests.map((r) => {
      const row = byIdentity.get(identity(r))!;
      return {
        outcome: row.inserted ? 'accepted' : 'duplicate',
        id: String(row.id),
        status: row.status,
        digestConflict: row.payload_sha256 !== r.payloadSha256,
      };
    });
  }

  /** One short autocommit statement: claims due and lease-expired rows under the claim token `lease`. */
  async claim(lease: string, now: Date, limit: number, leaseMs: number): Promise<InboxEvent[]> {
    const rows = await queryPrepared<EventRow>(this.dataSource, 'inbox_claim', CLAIM, [now, lease, limit, leaseMs]);
    // UPDATE ... RETURNING has no order: put the events back in arrival order, which a batch applies them in.
    rows.sort((a, b) => compareIds(a.id, b.id));
    return rows.map((r) => ({
      id: String(r.id),
      sourceScope: r.source_scope,
      eventId: r.event_id,
      tenantId: r.tenant_id,
      provider: r.provider,
      endpointId: r.endpoint_id,
      eventType: r.event_type,
      payload: r.payload,
      attempts: r.attempts,
      receivedAt: r.received_at,
      lease,
    }));
  }

  /** Fenced final status in the caller's transaction; false when the lease was lost. */
  async finish(
    tx: EntityManager,
    id: string,
    lease: string,
    status: 'done' | 'ignored' | 'quarantined',
    reason: string | null,
    now: Date,
  ): Promise<boolean> {
    const [, count]: [unknown, number] = await tx.query(FINISH, [id, lease, status, reason, now]);
    return count === 1;
  }

  /** Fenced completion of a batch in `tx`; resolves with the ids still held (fewer: the caller rolls back). */
  async finishMany(
    tx: EntityManager,
    outcomes: { id: string; status: 'done' | 'ignored' | 'quarantined'; reason: string | null }[],
    lease: string,
    now: Date,
  ): Promise<Set<string>> {
    const { rows } = await queryPreparedIn<{ id: string }>(tx, 'inbox_finish_many', FINISH_MANY, [
      outcomes.map((o) => o.id),
      outcomes.map((o) => o.status),
      outcomes.map((o) => o.reason),
      now,
      lease,
    ]);
    return new Set(rows.map((r) => String(r.id)));
  }

  /** Fenced retry bookkeeping; undefined when the lease was lost. */
  async recordFailure(
    id: string,
    lease: string,
    error: string,
    nextAttemptAt: Date,
    maxAttempts: number,
    now: Date,
  ): Promise<{ status: InboxStatus; attempts: number } | undefined> {
    const [rows]: [{ status: InboxStatus; attempts: number }[], number] = await this.dataSource.query(RECORD_FAILURE, [
      id,
      lease,
      error,
      nextAttemptAt,
      maxAttempts,
      now,
    ]);
    return rows[0];
  }

  // ---- Retention: one bounded batch per call, each its own autocommit statement ----

  /** Purges up to `limit` payloads of settled events received before `before`; returns how many. */
  async purgePayloads(before: Date, limit: number): Promise<number> {
    const [, count]: [unknown, number] = await this.dataSource.query(PURGE_PAYLOADS, [before, limit]);
    return count;
  }

  /** Deletes up to `limit` settled identities received before `before`; returns how many. */
  async deleteIdentities(before: Date, limit: number): Promise<number> {
    const [, count]: [unknown, number] = await this.dataSource.query(DELETE_IDENTITIES, [before, limit]);
    return count;
  }

  // ---- Admin reads and repairs (separate from the worker's hot path) ----

  async adminList(filter: InboxFilter, page: PageRequest): Promise<Page<InboxEventView>> {
    const where = inboxFilterWhere(filter).before('received_at', page.after);
    const limit = where.param(page.limit + 1);
    const rows: AdminRow[] = await this.dataSource.query(
      `SELECT ${ADMIN_VIEW_COLUMNS}, ${microsExpr('received_at')} AS page_at_us
         FROM webhook_inbox ${where.sql()} ORDER BY received_at DESC, id DESC LIMIT ${limit}`,
      where.params,
    );
    return toPage(rows, page.limit, (r) => toView(r, false));
  }

  async adminGet(id: string, withPayload: boolean): Promise<InboxEventView | undefined> {
    const rows: AdminRow[] = await this.dataSource.query(
      `SELECT ${ADMIN_VIEW_COLUMNS}${withPayload ? ', payload' : ''} FROM webhook_inbox WHERE id = $1`,
      [id],
    );
    return rows[0] && toView(rows[0], withPayload);
  }

  /** Locks the row for an admin change in `tx`; undefined when it does not exist. */
  async adminLock(tx: EntityManager, id: string): Promise<{ status: InboxStatus; payloadPurged: boolean } | undefined> {
    const rows: { status: InboxStatus; payload_purged: boolean }[] = await tx.query(ADMIN_LOCK, [id]);
    return rows[0] && { status: rows[0].status, payloadPurged: rows[0].payload_purged };
  }

  async adminReplay(tx: EntityManager, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_REPLAY, [id, now]);
  }

  async adminQuarantine(tx: EntityManager, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_QUARANTINE, [id, now]);
  }

  async adminCount(filter: InboxFilter, statuses: InboxStatus[]): Promise<number> {
    const where = inboxFilterWhere(filter).add('status = ANY(?::text[])', statuses).add('payload IS NOT NULL');
    const rows: { n: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS n FROM webhook_inbox ${where.sql()}`,
      where.params,
    );
    return rows[0].n;
  }

  /** Ids matching the filter after `afterId` up to `maxId`, ascending (read without locks). */
  async adminMatchingIds(filter: InboxFilter, statuses: InboxStatus[], afterId: string, maxId: string, limit: number): Promise<string[]> {
    const where = inboxFilterWhere(filter)
      .add('status = ANY(?::text[])', statuses)
      .add('payload IS NOT NULL')
      .add('id > ?::bigint AND id <= ?::bigint', afterId, maxId);
    const n = where.param(limit);
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM webhook_inbox ${where.sql()} ORDER BY id LIMIT ${n}`,
      where.params,
    );
    return rows.map((r) => String(r.id));
  }

  async adminMaxId(): Promise<string> {
    const rows: { max: string | null }[] = await this.dataSource.query('SELECT max(id)::text AS max FROM webhook_inbox');
    return rows[0].max ?? '0';
  }

  /** Replays the given ids in `tx` where they still match; returns what changed. */
  async adminReplayIds(tx: EntityManager, filter: InboxFilter, statuses: InboxStatus[], ids: string[], now: Date): Promise<InboxStatusChange[]> {
    const where = inboxFilterWhere(filter).add('status = ANY(?::text[])', statuses);
    const idsParam = where.param(ids);
    const nowParam = where.param(now);
    const [rows]: [{ id: string; before: InboxStatus }[], number] = await tx.query(
      adminReplayBatch(where.sql(), idsParam, nowParam),
      where.params,
    );
    return rows.map((r) => ({ id: String(r.id), before: r.before, after: 'pending' as const }));
  }

  async adminBacklog(): Promise<InboxBacklog> {
    const rows: { status: string; n: number; oldest: Date | null }[] = await this.dataSource.query(ADMIN_BACKLOG);
    const by = new Map(rows.map((r) => [r.status, r]));
    return {
      pending: by.get('pending')?.n ?? 0,
      processing: by.get('processing')?.n ?? 0,
      quarantined: by.get('quarantined')?.n ?? 0,
      oldestPendingReceivedAt: by.get('pending')?.oldest ?? null,
    };
  }

  async adminStats(latencySince: Date): Promise<InboxStats> {
    const [byStatus, backlog, attempts, failures, latency] = await Promise.all([
      this.dataSource.query(ADMIN_STATS_BY_STATUS) as Promise<{ status: string; n: number }[]>,
      this.adminBacklog(),
      this.dataSource.query(ADMIN_STATS_ATTEMPTS) as Promise<{ retrying: number; max_attempts: number }[]>,
      this.dataSource.query(ADMIN_STATS_FAILURES) as Promise<{ provider: string; type: string; error: string; n: number }[]>,
      this.dataSource.query(ADMIN_STATS_LATENCY, [latencySince]) as Promise<{ completed: number; p: number[] | null }[]>,
    ]);
    const p = latency[0].p;
    return {
      byStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
      oldestPendingReceivedAt: backlog.oldestPendingReceivedAt,
      retrying: attempts[0].retrying,
      maxAttempts: attempts[0].max_attempts,
      recurringFailures: failures.map((f) => ({ provider: f.provider, type: f.type, error: f.error, count: f.n })),
      latency: { completed: latency[0].completed, p50: p?.[0] ?? null, p95: p?.[1] ?? null, p99: p?.[2] ?? null },
    };
  }
}

interface AdminRow extends IdentityRow {
  status: InboxStatus;
  status_reason: string | null;
  payload_sha256: string;
  verified_with: string;
  attempts: number;
  next_attempt_at: Date;
  locked_by: string | null;
  locked_until: Date | null;
  last_error: string | null;
  received_at: Date;
  completed_at: Date | null;
  deliveries: number;
  last_delivery_at: Date;
  digest_conflicts: number;
  payload_purged: boolean;
  payload?: unknown;
  page_at_us: string;
}

function inboxFilterWhere(f: InboxFilter): SqlWhere {
  const w = new SqlWhere();
  if (f.status) w.add('status = ?', f.status);
  if (f.provider) w.add('provider = ?', f.provider);
  if (f.type) w.add('event_type = ?', f.type);
  if (f.tenant) w.add('tenant_id = ?', f.tenant);
  if (f.endpoint) w.add('endpoint_id = ?', f.endpoint);
  if (f.from) w.add('received_at >= ?', f.from);
  if (f.to) w.add('received_at < ?', f.to);
  return w;
}

function toView(r: AdminRow, withPayload: boolean): InboxEventView {
  const view: InboxEventView = {
    id: String(r.id),
    sourceScope: r.source_scope,
    eventId: r.event_id,
    tenantId: r.tenant_id,
    provider: r.provider,
    endpointId: r.endpoint_id,
    eventType: r.event_type,
    status: r.status,
    statusReason: r.status_reason,
    payloadSha256: r.payload_sha256,
    verifiedWith: r.verified_with,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lockedBy: r.locked_by,
    lockedUntil: r.locked_until,
    lastError: r.last_error,
    receivedAt: r.received_at,
    completedAt: r.completed_at,
    deliveries: r.deliveries,
    lastDeliveryAt: r.last_delivery_at,
    digestConflicts: r.digest_conflicts,
    payloadPurged: r.payload_purged,
  };
  if (withPayload) view.payload = r.payload ?? null;
  return view;
}

/** Numeric order of two bigint ids as pg returns them (decimal strings), without a BigInt per comparison. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
