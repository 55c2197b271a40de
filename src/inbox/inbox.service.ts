import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ConflictError, NotFoundError } from '../common/errors';
import { Page, PageRequest } from '../common/pagination';
import { PgNotifications } from '../database/pg-notifications';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { isDeadlock, isInvalidData } from '../common/database-errors';
import { GroupCommit } from './group-commit';
import { identity, InboxRepository } from './inbox.repository';
import { INBOX_CHANNEL } from './inbox-worker.scheduler';
import { AcceptRequest, AcceptResult } from './inbox.types';
import { InboxBacklog, InboxEventView, InboxFilter, InboxStats, InboxStatus, InboxStatusChange } from './inbox.types';

@Injectable()
export class InboxService {
  private readonly acceptGroup: GroupCommit<AcceptRequest, AcceptResult | Error>;

  constructor(
    private readonly repository: InboxRepository,
    private readonly notifications: PgNotifications,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.acceptGroup = new GroupCommit<AcceptRequest, AcceptResult | Error>({
      ...config.ingestBatch,
      key: identity,
      flush: (requests) => this.acceptTogether(requests),
    });
  }

  /**
   * Claims the event identity atomically and commits it as pending work, sharing
   * the commit with concurrent requests. Resolves only after that commit; rejects
   * if the outcome is not known to be committed.
   */
  async accept(request: AcceptRequest): Promise<AcceptResult> {
    const result = await this.acceptGroup.submit(request);
    if (result instanceof Error) throw result;
    // Wake a worker now rather than at the next poll (throttled, best effort).
    if (result.outcome === 'accepted' && result.status === 'pending') this.notifications.notify(INBOX_CHANNEL);
    return result;
  }

  private async acceptTogether(requests: AcceptRequest[]): Promise<(AcceptResult | Error)[]> {
    try {
      return await this.repository.acceptMany(requests);
    } catch (error) {
      // One body PostgreSQL refuses must not fail the others: answer each alone.
      // A deadlock between two instances' batches is safe to retry the same way.
      if (requests.length === 1 || !(isInvalidData(error) || isDeadlock(error))) throw error;
      return Promise.all(
        requests.map((r) =>
          this.repository.acceptMany([r]).then(
            ([result]) => result,
            (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
          ),
        ),
      );
    }
  }

  // ---- Retention (maintenance role): one bounded batch per call ----

  /** Drops payloads of done/ignored events received before `before` (identity, digest, status kept). */
  purgePayloads(before: Date, limit: number): Promise<number> {
    return this.repository.purgePayloads(before, limit);
  }

  /** Deletes done/ignored events received before `before`: a resend after this is accepted as new. */
  deleteIdentities(before: Date, limit: number): Promise<number> {
    return this.repository.deleteIdentities(before, limit);
  }

  // ---- Admin reads and repairs (the admin module owns the transaction and its audit row) ----

  listForAdmin(filter: InboxFilter, page: PageRequest): Promise<Page<InboxEventView>> {
    return this.repository.adminList(filter, page);
  }

  getForAdmin(id: string, withPayload: boolean): Promise<InboxEventView | undefined> {
    return this.repository.adminGet(id, withPayload);
  }

  /**
   * Re-queues one event in `tx` with its identity unchanged. Throws NotFoundError or
   * ConflictError (`not_replayable` while a worker holds it, `payload_purged` after retention).
   */
  async replayInTx(tx: EntityManager, id: string, now: Date): Promise<InboxStatusChange> {
    const row = await this.repository.adminLock(tx, id);
    if (!row) throw new NotFoundError('inbox_event_not_found', 'no inbox event with this id');
    if (!REPLAYABLE.includes(row.status)) throw new ConflictError('not_replayable', `an event in status ${row.status} cannot be replayed`);
    if (row.payloadPurged) throw new ConflictError('payload_purged', 'the payload was purged by retention');
    await this.repository.adminReplay(tx, id, now);
    return { id, before: row.status, after: 'pending' };
  }

  /** Stops one pending (or in-flight: its worker loses the fence) event in `tx`. */
  async quarantineInTx(tx: EntityManager, id: string, now: Date): Promise<InboxStatusChange> {
    const row = await this.repository.adminLock(tx, id);
    if (!row) throw new NotFoundError('inbox_event_not_found', 'no inbox event with this id');
    if (row.status !== 'pending' && row.status !== 'processing') {
      throw new ConflictError('not_quarantinable', `an event in status ${row.status} cannot be quarantined`);
    }
    await this.repository.adminQuarantine(tx, id, now);
    return { id, before: row.status, after: 'quarantined' };
  }

  /** Replayable rows matching a bulk filter (a dry run counts with exactly this). */
  countReplayable(filter: InboxFilter): Promise<number> {
    return this.repository.adminCount(filter, replayableStatuses(filter));
  }

  /** Highest id now: bounds a bulk replay to the rows that existed when it started. */
  maxId(): Promise<string> {
    return this.repository.adminMaxId();
  }

  replayableIds(filter: InboxFilter, afterId: string, maxId: string, limit: number): Promise<string[]> {
    return this.repository.adminMatchingIds(filter, replayableStatuses(filter), afterId, maxId, limit);
  }

  /** Replays those of `ids` that still match the filter, in `tx`. */
  replayIdsInTx(tx: EntityManager, filter: InboxFilter, ids: string[], now: Date): Promise<InboxStatusChange[]> {
    return this.repository.adminReplayIds(tx, filter, replayableStatuses(filter), ids, now);
  }

  /** Wakes workers after a committed replay (throttled, best effort). */
  wakeWorkers(): void {
    this.notifications.notify(INBOX_CHANNEL);
  }

  backlog(): Promise<InboxBacklog> {
    return this.repository.adminBacklog();
  }

  stats(latencySince: Date): Promise<InboxStats> {
    return this.repository.adminStats(latencySince);
  }
}

/** Settled statuses an operator may send back to the worker. */
const REPLAYABLE: InboxStatus[] = ['quarantined', 'done', 'ignored'];

function replayableStatuses(filter: InboxFilter): InboxStatus[] {
  return filter.status ? REPLAYABLE.filter((s) => s === filter.status) : REPLAYABLE;
}
