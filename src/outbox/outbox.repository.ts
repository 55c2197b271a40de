import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { microsExpr, Page, PageRequest, SqlWhere, toPage } from '../common/pagination';
import { OutboxEntry } from './destinations/destination';
import { CLAIM_OUTBOX, PRUNE_DELIVERED, RECORD_OUTCOMES } from './outbox.queries';
import { queryPrepared } from '../database/prepared-statement';
import {
  ADMIN_OUTBOX_BACKLOG,
  ADMIN_OUTBOX_BY_STATUS,
  ADMIN_OUTBOX_COLUMNS,
  ADMIN_OUTBOX_FAILURES,
  ADMIN_OUTBOX_LOCK,
  ADMIN_OUTBOX_MARK_DELIVERED,
  ADMIN_OUTBOX_REQUEUE,
} from './outbox.queries';

export type OutboxStatus = 'pending' | 'delivering' | 'delivered' | 'unresolved' | 'dead';

/** The outcome of one claimed attempt, as it will be stored. */
export interface OutboxOutcome {
  id: string;
  /** The attempt number the claim returned: part of the fence. */
  attempts: number;
  status: Exclude<OutboxStatus, 'delivering'>;
  nextAttemptAt?: Date;
  lastError?: string;
  statusCode?: number;
  outcomeUnknown: boolean;
  /** Not sent this round (the lease ran short): the claim's attempt is given back. */
  deferred?: boolean;
}

interface ClaimedRow {
  id: string;
  operation_key: string;
  destination: string;
  operation_type: string;
  tenant_id: string;
  payload: Record<string, unknown>;
  attempts: number;
  outcome_unknown: boolean;
}

/** Owner of the relay's `outbox` SQL: claim and fenced outcome recording. */
@Injectable()
export class OutboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** One autocommit statement: the claim is committed (and every row lock released) when it returns. */
  async claim(relayId: string, now: Date, leaseMs: number, limit: number): Promise<OutboxEntry[]> {
    const rows = await queryPrepared<ClaimedRow>(this.dataSource, 'outbox_claim', CLAIM_OUTBOX, [now, relayId, leaseMs, limit]);
    return rows.map((r) => ({
      id: String(r.id),
      operationKey: r.operation_key,
      destination: r.destination,
      operationType: r.operation_type,
      tenantId: r.tenant_id,
      payload: r.payload,
      attempts: r.attempts,
      outcomeUnknown: r.outcome_unknown,
    }));
  }

  /** Returns the ids actually updated: an id missing from it lost its lease to another relay. */
  async record(relayId: string, now: Date, outcomes: OutboxOutcome[]): Promise<Set<string>> {
    if (outcomes.length === 0) return new Set();
    const rows = await queryPrepared<{ id: string }>(this.dataSource, 'outbox_record_outcomes', RECORD_OUTCOMES, [
      outcomes.map((o) => o.id),
      outcomes.map((o) => o.attempts),
      outcomes.map((o) => o.status),
      outcomes.map((o) => o.nextAttemptAt ?? null),
      outcomes.map((o) => o.lastError?.slice(0, 500) ?? null),
      outcomes.map((o) => o.statusCode ?? null),
      outcomes.map((o) => o.outcomeUnknown),
      relayId,
      now,
      outcomes.map((o) => o.deferred ?? false),
    ]);
    return new Set(rows.map((r) => String(r.id)));
  }

  /** Retention: deletes up to `limit` entries delivered before `before` in one autocommit statement. */
  async pruneDelivered(before: Date, limit: number): Promise<number> {
    const [, count] = (await this.dataSource.query(PRUNE_DELIVERED, [before, limit])) as [unknown, number];
    return count;
  }

  // ---- Admin reads and repairs (separate from the relay's hot path) ----

  async adminList(filter: OutboxFilter, page: PageRequest, withPayload: boolean): Promise<Page<OutboxEntryView>> {
    const where = new SqlWhere();
    if (filter.status) where.add('status = ?', filter.status);
    if (filter.destination) where.add('destination = ?', filter.destination);
    if (filter.tenant) where.add('tenant_id = ?', filter.tenant);
    if (filter.from) where.add('created_at >= ?', filter.from);
    if (filter.to) where.add('created_at < ?', filter.to);
    where.before('created_at', page.after);
    const limit = where.param(page.limit + 1);
    const rows: AdminOutboxRow[] = await this.dataSource.query(
      `SELECT ${ADMIN_OUTBOX_COLUMNS}${withPayload ? ', payload' : ''}, ${microsExpr('created_at')} AS page_at_us
         FROM outbox ${where.sql()} ORDER BY created_at DESC, id DESC LIMIT ${limit}`,
      where.params,
    );
    return toPage(rows, page.limit, (r) => toOutboxView(r, withPayload));
  }

  async adminGet(id: string, withPayload: boolean): Promise<OutboxEntryView | undefined> {
    const rows: AdminOutboxRow[] = await this.dataSource.query(
      `SELECT ${ADMIN_OUTBOX_COLUMNS}${withPayload ? ', payload' : ''} FROM outbox WHERE id = $1`,
      [id],
    );
    return rows[0] && toOutboxView(rows[0], withPayload);
  }

  async adminLock(tx: EntityManager, id: string): Promise<OutboxStatus | undefined> {
    const rows: { status: OutboxStatus }[] = await tx.query(ADMIN_OUTBOX_LOCK, [id]);
    return rows[0]?.status;
  }

  async adminRequeue(tx: EntityManager, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_OUTBOX_REQUEUE, [id, now]);
  }

  async adminMarkDelivered(tx: EntityManager, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_OUTBOX_MARK_DELIVERED, [id, now]);
  }

  async adminBacklog(): Promise<OutboxBacklog> {
    const rows: { status: string; n: number; oldest: Date | null }[] = await this.dataSource.query(ADMIN_OUTBOX_BACKLOG);
    const by = new Map(rows.map((r) => [r.status, r]));
    return {
      pending: by.get('pending')?.n ?? 0,
      delivering: by.get('delivering')?.n ?? 0,
      unresolved: by.get('unresolved')?.n ?? 0,
      dead: by.get('dead')?.n ?? 0,
      oldestPendingCreatedAt: by.get('pending')?.oldest ?? null,
    };
  }

  async adminStats(): Promise<OutboxStats> {
    const [byStatus, backlog, failures] = await Promise.all([
      this.dataSource.query(ADMIN_OUTBOX_BY_STATUS) as Promise<{ status: string; n: number }[]>,
      this.adminBacklog(),
      this.dataSource.query(ADMIN_OUTBOX_FAILURES) as Promise<{ destination: string; type: string; error: string; n: number }[]>,
    ]);
    return {
      byStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
      oldestPendingCreatedAt: backlog.oldestPendingCreatedAt,
      recurringFailures: failures.map((f) => ({ destination: f.destination, type: f.type, error: f.error, count: f.n })),
    };
  }
}

export interface OutboxFilter {
  status?: OutboxStatus;
  destination?: string;
  tenant?: string;
  from?: Date;
  to?: Date;
}

export interface OutboxEntryView {
  id: string;
  operationKey: string;
  destination: string;
  operationType: string;
  tenantId: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date;
  lockedBy: string | null;
  lockedUntil: Date | null;
  lastError: string | null;
  lastStatusCode: number | null;
  outcomeUnknown: boolean;
  sourceEventId: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  payload?: unknown;
}

export interface OutboxBacklog {
  pending: number;
  delivering: number;
  unresolved: number;
  dead: number;
  oldestPendingCreatedAt: Date | null;
}

export interface OutboxStats {
  byStatus: Record<string, number>;
  oldestPendingCreatedAt: Date | null;
  recurringFailures: { destination: string; type: string; error: string; count: number }[];
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
  };
  if (withPayload) view.payload = r.payload;
  return view;
}
