import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { ConflictError, NotFoundError } from '../common/errors';
import { Page, PageRequest } from '../common/pagination';
import { inScope, TenantScope } from '../common/tenant-scope';
import { afterCommit, transactionWithAfterCommit } from '../database/after-commit';
import { PgNotifications } from '../database/pg-notifications';
import { OutboxAdminRepository } from './outbox-admin.repository';
import { OUTBOX_CHANNEL, OutboxAttempt, OutboxBacklog, OutboxEntryView, OutboxFilter, OutboxStats, OutboxStatus, OutboxStatusChange } from './outbox.types';

/**
 * The operators' use cases on the outbox. Each repair is one transaction: lock the
 * entry, check the rule, change it, write the audit row; the relays are woken
 * only once it has committed.
 */
@Injectable()
export class OutboxAdminService {
  private readonly logger = new Logger(OutboxAdminService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: OutboxAdminRepository,
    private readonly audit: AuditService,
    private readonly notifications: PgNotifications,
    private readonly clock: Clock,
  ) {}

  list(filter: OutboxFilter, page: PageRequest, withPayload: boolean): Promise<Page<OutboxEntryView>> {
    return this.repository.list(filter, page, withPayload);
  }

  /** How many entries were delivered since `since`. */
  deliveredSince(since: Date, tenants: TenantScope): Promise<number> {
    return this.repository.deliveredSince(since, tenants);
  }

  /** The entries an inbox event's business transaction wrote, oldest first. */
  entriesOfEvent(inboxId: string): Promise<OutboxEntryView[]> {
    return this.repository.entriesOfEvent(inboxId);
  }

  /** Every delivery attempt of the given entries, oldest first. */
  attemptsOf(ids: string[]): Promise<OutboxAttempt[]> {
    return this.repository.attemptsOf(ids);
  }

  /**
   * One entry, undefined when it does not exist or is outside `tenants`. With
   * `payloadReader` (an operator) the payload is included and the read audited.
   */
  async get(id: string, tenants: TenantScope, payloadReader?: Actor): Promise<OutboxEntryView | undefined> {
    const who = payloadReader;
    if (!who) {
      const entry = await this.repository.get(id, false);
      return entry && inScope(tenants, entry.tenantId) ? entry : undefined;
    }
    // The read and its audit row commit together: no payload leaves without its trace.
    return this.dataSource.transaction(async (tx) => {
      const entry = await this.repository.get(id, true);
      if (!entry || !inScope(tenants, entry.tenantId)) return undefined;
      await this.audit.record(tx, who, { action: 'outbox.payload_read', target: `outbox:${id}`, reason: 'payload read' });
      return entry;
    });
  }

  /** A dead or unresolved entry goes back to pending under the same operation key. */
  retry(who: Actor, id: string, reason: string, tenants: TenantScope): Promise<OutboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const status = await this.lock(tx, id, tenants);
      if (status !== 'dead' && status !== 'unresolved') {
        throw new ConflictError('not_retryable', `an entry in status ${status} cannot be retried`);
      }
      await this.repository.requeue(tx, id, this.clock.now());
      const change: OutboxStatusChange = { id, before: status, after: 'pending' };
      const recorded = await this.audit.recordChange(tx, who, { action: 'outbox.retry', target: `outbox:${id}`, reason }, change);
      afterCommit(tx, () => this.wakeRelays());
      this.logger.log({ outboxId: id, actor: who.name, before: change.before }, 'outbox entry re-queued');
      return recorded;
    });
  }

  /** An operator's decision on an unresolved entry: it was applied (delivered), or send it again (retry). */
  resolve(
    who: Actor,
    id: string,
    outcome: 'delivered' | 'retry',
    reason: string,
    tenants: TenantScope,
  ): Promise<OutboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const status = await this.lock(tx, id, tenants);
      if (status !== 'unresolved') throw new ConflictError('not_unresolved', `an entry in status ${status} needs no resolution`);
      const now = this.clock.now();
      if (outcome === 'delivered') await this.repository.markDelivered(tx, id, now);
      else await this.repository.requeue(tx, id, now);
      const change: OutboxStatusChange = { id, before: status, after: outcome === 'delivered' ? 'delivered' : 'pending' };
      const recorded = await this.audit.recordChange(tx, who, { action: 'outbox.resolve', target: `outbox:${id}`, reason, details: { outcome } }, change);
      if (outcome === 'retry') afterCommit(tx, () => this.wakeRelays());
      this.logger.log({ outboxId: id, actor: who.name, outcome }, 'unresolved outbox entry resolved');
      return recorded;
    });
  }

  backlog(): Promise<OutboxBacklog> {
    return this.repository.backlog();
  }

  stats(tenants: TenantScope): Promise<OutboxStats> {
    return this.repository.stats(tenants);
  }

  /** Locks the entry; 404 when it does not exist or is outside `tenants` (never a hint that it exists). */
  private async lock(tx: EntityManager, id: string, tenants: TenantScope): Promise<OutboxStatus> {
    const row = await this.repository.lock(tx, id);
    if (!row || !inScope(tenants, row.tenantId)) throw new NotFoundError('outbox_entry_not_found', 'no outbox entry with this id');
    return row.status;
  }

  /** Throttled and best effort: a missed wake only waits for the next poll. */
  private wakeRelays(): void {
    this.notifications.notify(OUTBOX_CHANNEL);
  }
}
