import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ScopeBacklog, ScopeMinute, toScopeBacklogs } from '../common/activity';
import { Page, PageRequest, queryPage, SqlWhere } from '../common/pagination';
import { ROW_IN_SCOPE, TenantScope } from '../common/tenant-scope';
import {
  ADMIN_DESTINATION_BACKLOG,
  ADMIN_DESTINATION_STATES,
  ADMIN_OUTBOX_BACKLOG,
  ADMIN_OUTBOX_BY_STATUS,
  ADMIN_OUTBOX_COLUMNS,
  ADMIN_OUTBOX_FAILURES,
  ADMIN_OUTBOX_LOCK,
  ADMIN_OUTBOX_MARK_DELIVERED,
  ADMIN_OUTBOX_RELEASE_HELD,
  ADMIN_OUTBOX_REQUEUE,
  ADMIN_OUTBOX_DELIVERED_SINCE,
  ATTEMPTS_OF_ENTRIES,
  ENTRIES_OF_EVENT,
  ENTRIES_WRITTEN_NOW,
  ADMIN_OUTBOX_OLDEST_PENDING,
  BACKLOG_BY_DESTINATION,
  DELIVERIES_BY_MINUTE,
} from './outbox-admin.queries';
import {
  DestinationStateRow,
  OutboxAttempt,
  OutboxBacklog,
  OutboxEntryView,
  OutboxFilter,
  OutboxStats,
  OutboxStatus,
} from './outbox.types';
import { UnitOfWork } from '../database/unit-of-work';

/** The operators' `outbox` SQL: lists, repairs, backlog and stats (never on the relay's path). */
@Injectable()
export class OutboxAdminRepository {
  constructor(private readonly dataSource: DataSource) {}

  async list(filter: OutboxFilter, page: PageRequest, withPayload: boolean): Promise<Page<OutboxEntryView>> {
    const where = new SqlWhere();
    if (filter.status) where.add('status = ?', filter.status);
    if (filter.destination) where.add('destination = ?', filter.destination);
    if (filter.tenant) where.add('tenant_id = ?', filter.tenant);
    if (filter.tenants) where.add('tenant_id = ANY(?::text[])', filter.tenants);
    if (filter.from) where.add('created_at >= ?', filter.from);
    if (filter.to) where.add('created_at < ?', filter.to);
    const columns = ADMIN_OUTBOX_COLUMNS + (withPayload ? ', payload' : '');
    return queryPage(this.dataSource, { columns, table: 'outbox', orderBy: 'created_at', where }, page, (r: AdminOutboxRow) =>
      toOutboxView(r, withPayload),
    );
  }

  /**
   * One entry of `tenants` (undefined: any); the tenant is part of the lookup, so no other tenant's
   * payload is read. In `tx` when given: an audited read holds one pooled connection, not two.
   */
  async get(id: string, tenants: TenantScope, withPayload: boolean, tx?: UnitOfWork): Promise<OutboxEntryView | undefined> {
    const rows: AdminOutboxRow[] = await (tx ?? this.dataSource).query(
      `SELECT ${ADMIN_OUTBOX_COLUMNS}${withPayload ? ', payload' : ''} FROM outbox WHERE ${ROW_IN_SCOPE}`,
      [id, tenants ?? null],
    );
    return rows[0] && toOutboxView(rows[0], withPayload);
  }

  async deliveredSince(since: Date, tenants: readonly string[] | undefined): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(ADMIN_OUTBOX_DELIVERED_SINCE, [since, tenants ?? null]);
    return rows[0].n;
  }

  async entriesOfEvent(inboxId: string, tx?: UnitOfWork): Promise<OutboxEntryView[]> {
    const rows: AdminOutboxRow[] = await (tx ?? this.dataSource).query(tx ? ENTRIES_WRITTEN_NOW : ENTRIES_OF_EVENT, [inboxId]);
    return rows.map((r) => toOutboxView(r, false));
  }

  async attemptsOf(ids: string[]): Promise<OutboxAttempt[]> {
    if (ids.length === 0) return [];
    const rows: OutboxAttemptRow[] = await this.dataSource.query(ATTEMPTS_OF_ENTRIES, [ids]);
    return rows.map((r) => ({
      outboxId: String(r.outbox_id),
      attempt: r.attempt,
      at: r.at,
      lease: r.lease,
      outcome: r.outcome,
      statusCode: r.status_code,
      durationMs: r.duration_ms,
      outcomeQuery: r.outcome_query,
      retryAfterMs: r.retry_after_ms,
      error: r.error,
    }));
  }

  /**
   * Locks the entry for an admin change in `tx`: its status, and whether an erasure blanked its
   * recipient before it was sent; undefined when it does not exist or is not of `tenants`.
   */
  async lock(tx: UnitOfWork, id: string, tenants: TenantScope): Promise<{ status: OutboxStatus; erased: boolean } | undefined> {
    const rows: { status: OutboxStatus; erased: boolean }[] = await tx.query(ADMIN_OUTBOX_LOCK, [id, tenants ?? null]);
    return rows[0];
  }

  async requeue(tx: UnitOfWork, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_OUTBOX_REQUEUE, [id, now]);
  }

  /** Also releases the entries of its aggregate held behind it. */
  async markDelivered(tx: UnitOfWork, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_OUTBOX_MARK_DELIVERED, [id, now]);
    await tx.query(ADMIN_OUTBOX_RELEASE_HELD, [id, now]);
  }

  destinationStates(): Promise<DestinationStateRow[]> {
    return this.dataSource.query(ADMIN_DESTINATION_STATES);
  }

  destinationBacklog(): Promise<{ destination: string; status: OutboxStatus; n: number; held: number }[]> {
    return this.dataSource.query(ADMIN_DESTINATION_BACKLOG);
  }

  async deliveriesByMinute(from: Date, to: Date): Promise<ScopeMinute[]> {
    const rows: { minute: Date; scope: string; tenant_id: string; delivered: number; failed: number }[] = await this.dataSource.query(
      DELIVERIES_BY_MINUTE,
      [from, to],
    );
    return rows.map((r) => ({
      minute: r.minute,
      scope: r.scope,
      tenantId: r.tenant_id,
      counts: { delivered: r.delivered, failed: r.failed },
    }));
  }

  async backlogByDestination(): Promise<ScopeBacklog[]> {
    return toScopeBacklogs(await this.dataSource.query(BACKLOG_BY_DESTINATION));
  }

  async backlog(): Promise<OutboxBacklog> {
    const rows: { status: string; n: number; oldest: Date | null }[] = await this.dataSource.query(ADMIN_OUTBOX_BACKLOG);
    const by = new Map(rows.map((r) => [r.status, r]));
    return {
      pending: by.get('pending')?.n ?? 0,
      delivering: by.get('delivering')?.n ?? 0,
      unresolved: by.get('unresolved')?.n ?? 0,
      dead: by.get('dead')?.n ?? 0,
      held: by.get('held')?.n ?? 0,
      oldestPendingCreatedAt: by.get('pending')?.oldest ?? null,
    };
  }

  async stats(tenants: readonly string[] | undefined): Promise<OutboxStats> {
    const scope = [tenants ?? null];
    const [byStatus, oldest, failures] = await Promise.all([
      this.dataSource.query(ADMIN_OUTBOX_BY_STATUS, scope) as Promise<{ status: string; n: number }[]>,
      this.dataSource.query(ADMIN_OUTBOX_OLDEST_PENDING, scope) as Promise<{ oldest: Date | null }[]>,
      this.dataSource.query(ADMIN_OUTBOX_FAILURES, scope) as Promise<{ destination: string; type: string; error: string; n: number }[]>,
    ]);
    return {
      byStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
      oldestPendingCreatedAt: oldest[0].oldest,
      recurringFailures: failures.map((f) => ({ destination: f.destination, type: f.type, error: f.error, count: f.n })),
    };
  }
}

interface AdminOutboxRow {
  id: string;
  operation_key: string;
  destination: string;
  operation_type: string;
  tenant_id: string;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: Date;
  locked_by: string | null;
  locked_until: Date | null;
  last_error: string | null;
  last_status_code: number | null;
  outcome_unknown: boolean;
  source_event_id: string | null;
  created_at: Date;
  delivered_at: Date | null;
  aggregate: string | null;
  aggregate_seq: number | null;
  held_by: string | null;
  payload?: unknown;
  page_at_us: string;
}

function toOutboxView(r: AdminOutboxRow, withPayload: boolean): OutboxEntryView {
  const view: OutboxEntryView = {
    id: String(r.id),
    operationKey: r.operation_key,
    destination: r.destination,
    operationType: r.operation_type,
    tenantId: r.tenant_id,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lockedBy: r.locked_by,
    lockedUntil: r.locked_until,
    lastError: r.last_error,
    lastStatusCode: r.last_status_code,
    outcomeUnknown: r.outcome_unknown,
    sourceEventId: r.source_event_id === null ? null : String(r.source_event_id),
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
    aggregate: r.aggregate,
    aggregateSeq: r.aggregate_seq,
    heldBy: r.held_by === null ? null : String(r.held_by),
  };
  if (withPayload) view.payload = r.payload;
  return view;
}

interface OutboxAttemptRow {
  outbox_id: string;
  attempt: number;
  at: Date;
  lease: string;
  outcome: OutboxAttempt['outcome'];
  status_code: number | null;
  duration_ms: number | null;
  outcome_query: OutboxAttempt['outcomeQuery'];
  retry_after_ms: number | null;
  error: string | null;
}
