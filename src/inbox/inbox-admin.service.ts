import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { ConflictError, NotFoundError } from '../common/errors';
import { Page, PageRequest } from '../common/pagination';
import { afterCommit, transactionWithAfterCommit } from '../database/after-commit';
import { PgNotifications } from '../database/pg-notifications';
import { InboxAdminRepository } from './inbox-admin.repository';
import { INBOX_CHANNEL, InboxActivity, InboxAttempt, InboxBacklog, InboxEventView, InboxFilter, InboxStats, InboxStatus, InboxStatusChange } from './inbox.types';

/** Rows per bulk-replay transaction: bounded lock time and WAL per commit. */
export const BULK_REPLAY_BATCH = 500;

/** Settled statuses an operator may send back to the worker. */
const REPLAYABLE: InboxStatus[] = ['quarantined', 'done', 'ignored'];

/**
 * The operators' use cases on the inbox. Each repair is one transaction: lock the
 * row, check the rule, change it, write the audit row; the workers are woken
 * only once it has committed.
 */
@Injectable()
export class InboxAdminService {
  private readonly logger = new Logger(InboxAdminService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: InboxAdminRepository,
    private readonly audit: AuditService,
    private readonly notifications: PgNotifications,
    private readonly clock: Clock,
  ) {}

  list(filter: InboxFilter, page: PageRequest): Promise<Page<InboxEventView>> {
    return this.repository.list(filter, page);
  }

  get(id: string, withPayload: boolean): Promise<InboxEventView | undefined> {
    return this.repository.get(id, withPayload);
  }

  /** Every processing attempt of one event, oldest first (the history its outcome statements wrote). */
  attemptsOf(id: string): Promise<InboxAttempt[]> {
    return this.repository.attemptsOf(id);
  }

  /** Accepted and done since `since`, and per endpoint the open rows and those accepted since. */
  activitySince(since: Date): Promise<InboxActivity> {
    return this.repository.activitySince(since);
  }

  /**
   * Re-queues one settled event with its identity unchanged. NotFoundError, or
   * ConflictError `not_replayable` (a worker holds it) / `payload_purged` (retention).
   */
  replay(who: Actor, id: string, reason: string): Promise<InboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const row = await this.repository.lock(tx, id);
      if (!row) throw notFound();
      if (!REPLAYABLE.includes(row.status)) throw new ConflictError('not_replayable', `an event in status ${row.status} cannot be replayed`);
      if (row.payloadPurged) throw new ConflictError('payload_purged', 'the payload was purged by retention');
      await this.repository.replay(tx, id, this.clock.now());
      const change: InboxStatusChange = { id, before: row.status, after: 'pending' };
      const recorded = await this.audit.recordChange(tx, who, { action: 'inbox.replay', target: `inbox:${id}`, reason }, change);
      afterCommit(tx, () => this.wakeWorkers());
      this.logger.log({ inboxId: id, actor: who.name, before: change.before }, 'inbox event replayed');
      return recorded;
    });
  }

  /** Stops one pending event, or an in-flight one (its worker loses the fence). */
  quarantine(who: Actor, id: string, reason: string): Promise<InboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const row = await this.repository.lock(tx, id);
      if (!row) throw notFound();
      if (row.status !== 'pending' && row.status !== 'processing') {
        throw new ConflictError('not_quarantinable', `an event in status ${row.status} cannot be quarantined`);
      }
      await this.repository.quarantine(tx, id, this.clock.now());
      const change: InboxStatusChange = { id, before: row.status, after: 'quarantined' };
      const recorded = await this.audit.recordChange(tx, who, { action: 'inbox.quarantine', target: `inbox:${id}`, reason }, change);
      this.logger.log({ inboxId: id, actor: who.name, before: change.before }, 'inbox event quarantined');
      return recorded;
    });
  }

  /**
   * Replays every settled event matching `filter` that existed when the call began,
   * in batches of BULK_REPLAY_BATCH ids, each batch with its own audit row.
   * A dry run counts exactly what a real run would start with.
   */
  async bulkReplay(who: Actor, filter: InboxFilter, dryRun: boolean, reason: string): Promise<{ count: number; dryRun: boolean; batches: number }> {
    const statuses = filter.status ? REPLAYABLE.filter((s) => s === filter.status) : REPLAYABLE;
    if (dryRun) return { count: await this.repository.count(filter, statuses), dryRun, batches: 0 };
    const maxId = await this.repository.maxId();
    let afterId = '0';
    let count = 0;
    let batches = 0;
    for (;;) {
      const ids = await this.repository.matchingIds(filter, statuses, afterId, maxId, BULK_REPLAY_BATCH);
      if (ids.length === 0) break;
      afterId = ids[ids.length - 1];
      const replayed = await transactionWithAfterCommit(this.dataSource, async (tx) => {
        const changes = await this.repository.replayIds(tx, filter, statuses, ids, this.clock.now());
        if (changes.length > 0) {
          await this.audit.record(tx, who, {
            action: 'inbox.replay_bulk',
            target: 'inbox:filter',
            reason,
            afterStatus: 'pending',
            details: { filter: describeFilter(filter), batch: batches + 1, ids: changes.map((c) => c.id), before: countBy(changes) },
          });
          afterCommit(tx, () => this.wakeWorkers());
        }
        return changes.length;
      });
      count += replayed;
      batches += 1;
      if (ids.length < BULK_REPLAY_BATCH) break;
    }
    this.logger.log({ actor: who.name, count, batches }, 'bulk replay finished');
    return { count, dryRun, batches };
  }

  backlog(): Promise<InboxBacklog> {
    return this.repository.backlog();
  }

  stats(latencySince: Date): Promise<InboxStats> {
    return this.repository.stats(latencySince);
  }

  /** Throttled and best effort: a missed wake only waits for the next poll. */
  private wakeWorkers(): void {
    this.notifications.notify(INBOX_CHANNEL);
  }

  // ---- Erasure: pieces of the orders module's use case (CustomerErasureService) ----

  /** Purges the payloads of `ids` in the caller's transaction (identity and digest kept); returns how many held one. */
  erasePayloads(tx: EntityManager, ids: string[]): Promise<number> {
    return this.repository.erasePayloads(tx, ids);
  }

  /** One batch of stored payloads (decrypted in memory) tested with `matches`; see InboxAdminRepository. */
  payloadsMatching(
    matches: (tenantId: string, json: string) => boolean,
    tenants: string[] | null,
    afterId: string,
    limit: number,
  ): Promise<{ ids: string[]; lastId: string | null }> {
    return this.repository.payloadsMatching(matches, tenants, afterId, limit);
  }
}

function notFound(): NotFoundError {
  return new NotFoundError('inbox_event_not_found', 'no inbox event with this id');
}

function describeFilter(f: InboxFilter): Record<string, string> {
  return Object.fromEntries(
    Object.entries(f)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : String(v)]),
  );
}

function countBy(changes: InboxStatusChange[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of changes) out[c.before] = (out[c.before] ?? 0) + 1;
  return out;
}
