import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ConflictError, NotFoundError } from '../common/errors';
import { Page, PageRequest } from '../common/pagination';
import { PgNotifications } from '../database/pg-notifications';
import { OUTBOX_CHANNEL } from './outbox-writer';
import {
  OutboxBacklog,
  OutboxEntryView,
  OutboxFilter,
  OutboxRepository,
  OutboxStats,
  OutboxStatus,
} from './outbox.repository';

export interface OutboxStatusChange {
  id: string;
  before: OutboxStatus;
  after: OutboxStatus;
}

/** The outbox as other modules see it: admin reads and repairs (the writer is OutboxWriter). */
@Injectable()
export class OutboxService {
  constructor(
    private readonly repository: OutboxRepository,
    private readonly notifications: PgNotifications,
  ) {}

  list(filter: OutboxFilter, page: PageRequest, withPayload: boolean): Promise<Page<OutboxEntryView>> {
    return this.repository.adminList(filter, page, withPayload);
  }

  get(id: string, withPayload: boolean): Promise<OutboxEntryView | undefined> {
    return this.repository.adminGet(id, withPayload);
  }

  /** A dead or unresolved entry goes back to pending under the same operation key, in `tx`. */
  async retryInTx(tx: EntityManager, id: string, now: Date): Promise<OutboxStatusChange> {
    const status = await this.lock(tx, id);
    if (status !== 'dead' && status !== 'unresolved') {
      throw new ConflictError('not_retryable', `an entry in status ${status} cannot be retried`);
    }
    await this.repository.adminRequeue(tx, id, now);
    return { id, before: status, after: 'pending' };
  }

  /** An operator's decision on an unresolved entry: it was applied (delivered), or send it again (retry). */
  async resolveInTx(tx: EntityManager, id: string, outcome: 'delivered' | 'retry', now: Date): Promise<OutboxStatusChange> {
    const status = await this.lock(tx, id);
    if (status !== 'unresolved') throw new ConflictError('not_unresolved', `an entry in status ${status} needs no resolution`);
    if (outcome === 'delivered') await this.repository.adminMarkDelivered(tx, id, now);
    else await this.repository.adminRequeue(tx, id, now);
    return { id, before: status, after: outcome === 'delivered' ? 'delivered' : 'pending' };
  }

  /** Retention (maintenance role): one bounded batch of delivered entries older than `before`. */
  pruneDelivered(before: Date, limit: number): Promise<number> {
    return this.repository.pruneDelivered(before, limit);
  }

  /** Wakes relays after a committed re-queue (throttled, best effort). */
  wakeRelays(): void {
    this.notifications.notify(OUTBOX_CHANNEL);
  }

  backlog(): Promise<OutboxBacklog> {
    return this.repository.adminBacklog();
  }

  stats(): Promise<OutboxStats> {
    return this.repository.adminStats();
  }

  private async lock(tx: EntityManager, id: string): Promise<OutboxStatus> {
    const status = await this.repository.adminLock(tx, id);
    if (!status) throw new NotFoundError('outbox_entry_not_found', 'no outbox entry with this id');
    return status;
  }
}
