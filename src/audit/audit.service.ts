import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Page, PageRequest, queryPage, SqlWhere } from '../common/pagination';
import { AUDIT_COLUMNS, AUDIT_OF_EVENT, INSERT_AUDIT, PRUNE_AUDIT } from './audit.queries';
import { UnitOfWork } from '../database/unit-of-work';

/** Who did it: an operator's token name and role. */
export interface Actor {
  name: string;
  role: string;
}

export interface AuditEntry {
  action: string;
  /** `inbox:<id>`, `outbox:<id>`, `order:<tenant>/<id>`, `inbox:filter` */
  target: string;
  reason: string;
  beforeStatus?: string | null;
  afterStatus?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditRecord extends Required<Omit<AuditEntry, 'details'>> {
  id: string;
  actor: string;
  role: string;
  details: Record<string, unknown> | null;
  at: Date;
}

export interface AuditFilter {
  action?: string;
  actor?: string;
  target?: string;
  from?: Date;
  to?: Date;
}

/**
 * The operators' audit log, sole owner of `admin_audit`. Like the outbox writer, it
 * records in the caller's transaction, so an action and its audit row commit together.
 */
@Injectable()
export class AuditService {
  constructor(private readonly dataSource: DataSource) {}

  /** Retention (RETENTION_AUDIT_DAYS): one batch of up to `limit` rows older than `before`. */
  async prune(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(PRUNE_AUDIT, [before, limit]);
    return rows[0].n;
  }

  async record(tx: UnitOfWork, who: Actor, entry: AuditEntry): Promise<string> {
    const rows: { id: string }[] = await tx.query(INSERT_AUDIT, [
      who.name,
      who.role,
      entry.action,
      entry.target,
      entry.reason,
      entry.beforeStatus ?? null,
      entry.afterStatus ?? null,
      entry.details ? JSON.stringify(entry.details) : null,
    ]);
    return String(rows[0].id);
  }

  /** Records one row's status change (its before and after) and returns the change with the audit row's id. */
  async recordChange<C extends { before: string; after: string }>(
    tx: UnitOfWork,
    who: Actor,
    entry: Omit<AuditEntry, 'beforeStatus' | 'afterStatus'>,
    change: C,
  ): Promise<C & { auditId: string }> {
    const auditId = await this.record(tx, who, { ...entry, beforeStatus: change.before, afterStatus: change.after });
    return { ...change, auditId };
  }

  /** Operator actions on an inbox event and on its outbox entries, oldest first. */
  async ofInboxEvent(inboxId: string, outboxIds: string[]): Promise<AuditRecord[]> {
    const rows: Omit<AuditRow, 'page_at_us'>[] = await this.dataSource.query(AUDIT_OF_EVENT, [
      `inbox:${inboxId}`,
      outboxIds.map((id) => `outbox:${id}`),
      inboxId,
    ]);
    return rows.map(toRecord);
  }

  async list(filter: AuditFilter, page: PageRequest): Promise<Page<AuditRecord>> {
    const where = new SqlWhere();
    if (filter.action) where.add('action = ?', filter.action);
    if (filter.actor) where.add('actor = ?', filter.actor);
    if (filter.target) where.add('target = ?', filter.target);
    if (filter.from) where.add('at >= ?', filter.from);
    if (filter.to) where.add('at < ?', filter.to);
    return queryPage(this.dataSource, { columns: AUDIT_COLUMNS, table: 'admin_audit', orderBy: 'at', where }, page, (r: AuditRow) =>
      toRecord(r),
    );
  }
}

function toRecord(r: Omit<AuditRow, 'page_at_us'>): AuditRecord {
  return {
    id: String(r.id),
    actor: r.actor,
    role: r.role,
    action: r.action,
    target: r.target,
    reason: r.reason,
    beforeStatus: r.before_status,
    afterStatus: r.after_status,
    details: r.details,
    at: r.at,
  };
}

interface AuditRow {
  id: string;
  actor: string;
  role: string;
  action: string;
  target: string;
  reason: string;
  before_status: string | null;
  after_status: string | null;
  details: Record<string, unknown> | null;
  at: Date;
  page_at_us: string;
}
