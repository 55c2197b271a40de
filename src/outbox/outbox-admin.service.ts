import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { ScopeBacklog, ScopeMinute } from '../common/activity';
import { Clock } from '../common/clock';
import { ConflictError, NotFoundError } from '../common/errors';
import { Page, PageRequest } from '../common/pagination';
import { TenantScope } from '../common/tenant-scope';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';
import { PgNotifications } from '../database/pg-notifications';
import { DestinationRegistry } from './destinations/destination.registry';
import { OutboxAdminRepository } from './outbox-admin.repository';
import {
  DestinationStateRow,
  DestinationView,
  OUTBOX_CHANNEL,
  OutboxAttempt,
  OutboxBacklog,
  OutboxEntryView,
  OutboxFilter,
  OutboxStats,
  OutboxStatus,
  OutboxStatusChange,
} from './outbox.types';

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
    private readonly destinations: DestinationRegistry,
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

  /** The entries transaction `tx` itself wrote for inbox event `inboxId` (the effect preview reads them before its rollback). */
  entriesWrittenIn(tx: UnitOfWork, inboxId: string): Promise<OutboxEntryView[]> {
    return this.repository.entriesOfEvent(inboxId, tx);
  }

  /** Every delivery attempt of the given entries, oldest first. */
  attemptsOf(ids: string[]): Promise<OutboxAttempt[]> {
    return this.repository.attemptsOf(ids);
  }

  /**
   * One entry, undefined when it does not exist or is outside `tenants` (the same
   * lookup: no payload work for another tenant's entry). With `payloadReader` (an
   * operator) the payload is included and the read audited.
   */
  async get(id: string, tenants: TenantScope, payloadReader?: Actor): Promise<OutboxEntryView | undefined> {
    const who = payloadReader;
    if (!who) return this.repository.get(id, tenants, false);
    // The read and its audit row commit together: no payload leaves without its trace.
    return runInTransaction(this.dataSource, async (tx) => {
      const entry = await this.repository.get(id, tenants, true, tx);
      if (!entry) return undefined;
      await this.audit.record(tx, who, { action: 'outbox.payload_read', target: `outbox:${id}`, reason: 'payload read' });
      return entry;
    });
  }

  /** A dead or unresolved entry goes back to pending under the same operation key. */
  retry(who: Actor, id: string, reason: string, tenants: TenantScope): Promise<OutboxStatusChange & { auditId: string }> {
    return runInTransaction(this.dataSource, async (tx) => {
      const status = await this.lock(tx, id, tenants, true);
      if (status !== 'dead' && status !== 'unresolved') {
        throw new ConflictError('not_retryable', `an entry in status ${status} cannot be retried`);
      }
      await this.repository.requeue(tx, id, this.clock.now());
      const change: OutboxStatusChange = { id, before: status, after: 'pending' };
      const recorded = await this.audit.recordChange(tx, who, { action: 'outbox.retry', target: `outbox:${id}`, reason }, change);
      tx.afterCommit(() => this.wakeRelays());
      this.logger.log({ outboxId: id, actor: who.name, before: change.before }, 'outbox entry re-queued');
      return recorded;
    });
  }

  /**
   * An operator's decision on an unresolved or dead entry: it was applied or is settled
   * otherwise (delivered: the entries of its aggregate held behind it go at once), or send
   * it again (retry).
   */
  resolve(
    who: Actor,
    id: string,
    outcome: 'delivered' | 'retry',
    reason: string,
    tenants: TenantScope,
  ): Promise<OutboxStatusChange & { auditId: string }> {
    return runInTransaction(this.dataSource, async (tx) => {
      const status = await this.lock(tx, id, tenants, outcome === 'retry');
      if (status !== 'unresolved' && status !== 'dead') {
        throw new ConflictError('not_unresolved', `an entry in status ${status} needs no resolution`);
      }
      const now = this.clock.now();
      if (outcome === 'delivered') await this.repository.markDelivered(tx, id, now);
      else await this.repository.requeue(tx, id, now);
      const change: OutboxStatusChange = { id, before: status, after: outcome === 'delivered' ? 'delivered' : 'pending' };
      const recorded = await this.audit.recordChange(
        tx,
        who,
        { action: 'outbox.resolve', target: `outbox:${id}`, reason, details: { outcome } },
        change,
      );
      tx.afterCommit(() => this.wakeRelays());
      this.logger.log({ outboxId: id, actor: who.name, outcome, before: status }, 'outbox entry resolved');
      return recorded;
    });
  }

  /** Every destination: registered ones, and any with entries or state (e.g. removed from this version). */
  async destinationList(): Promise<DestinationView[]> {
    const [states, backlog] = await Promise.all([this.repository.destinationStates(), this.repository.destinationBacklog()]);
    const now = this.clock.now().getTime();
    const names = new Set([...this.destinations.names(), ...states.map((s) => s.destination), ...backlog.map((b) => b.destination)]);
    return [...names].sort().map((name) => {
      const registered = this.destinations.get(name);
      const state = states.find((s) => s.destination === name);
      const open = { pending: 0, held: 0, delivering: 0, unresolved: 0, dead: 0 };
      for (const b of backlog) {
        if (b.destination !== name || !(b.status in open)) continue;
        open[b.status as keyof typeof open] = b.n;
        if (b.status === 'pending') open.held = b.held;
      }
      const settings = registered?.settings;
      return {
        name,
        registered: Boolean(registered),
        origin: settings?.url ? new URL(settings.url).origin : null,
        settings: settings ? { concurrency: settings.concurrency, circuit: settings.circuit, rateLimit: settings.rateLimit ?? null } : null,
        circuit: {
          state: state?.circuit ?? 'closed',
          failures: state?.failures ?? 0,
          retryAt: state?.circuit === 'open' ? state.retry_at : null,
          probeUntil: state?.circuit === 'half_open' ? state.probe_until : null,
        },
        pausedUntil: state?.paused_until ?? null,
        paused: Boolean(state?.paused_until && state.paused_until.getTime() > now),
        lastError: state?.last_error ?? null,
        changedAt: state?.changed_at ?? null,
        backlog: open,
      };
    });
  }

  /** The shared state rows alone (one tiny table): for the metrics scrape. */
  destinationStates(): Promise<DestinationStateRow[]> {
    return this.repository.destinationStates();
  }

  /** Delivered and failed attempts per minute of [from, to), destination and tenant: for the activity rollup. */
  deliveriesByMinute(from: Date, to: Date): Promise<ScopeMinute[]> {
    return this.repository.deliveriesByMinute(from, to);
  }

  backlogByDestination(): Promise<ScopeBacklog[]> {
    return this.repository.backlogByDestination();
  }

  backlog(): Promise<OutboxBacklog> {
    return this.repository.backlog();
  }

  stats(tenants: TenantScope): Promise<OutboxStats> {
    return this.repository.stats(tenants);
  }

  /**
   * Locks the entry; 404 when it does not exist or is outside `tenants` (never a hint that it
   * exists). `resend`: for a change that sends it again, which an erased recipient refuses.
   */
  private async lock(tx: UnitOfWork, id: string, tenants: TenantScope, resend: boolean): Promise<OutboxStatus> {
    const entry = await this.repository.lock(tx, id, tenants);
    if (!entry) throw new NotFoundError('outbox_entry_not_found', 'no outbox entry with this id');
    if (resend && entry.erased) throw new ConflictError('recipient_erased', 'the recipient was erased: this entry is never sent');
    return entry.status;
  }

  /** Throttled and best effort: a missed wake only waits for the next poll. */
  private wakeRelays(): void {
    this.notifications.notify(OUTBOX_CHANNEL);
  }
}
