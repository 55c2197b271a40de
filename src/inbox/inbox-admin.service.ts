import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { ConflictError, NotFoundError } from '../common/errors';
import { Page, PageRequest } from '../common/pagination';
import { TenantScope } from '../common/tenant-scope';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';
import { PgNotifications } from '../database/pg-notifications';
import { ReplayRefusal, replayRefusal } from './acceptance';
import { InboxAdminRepository } from './inbox-admin.repository';
import { InboxEventProcessor } from './inbox-event.processor';
import { EventReads } from '../provider-api/event-reads';
import {
  INBOX_CHANNEL,
  InboxActivity,
  InboxAttempt,
  InboxBacklog,
  InboxEvent,
  InboxEventView,
  InboxFilter,
  InboxStats,
  InboxStatus,
  InboxStatusChange,
  PayloadErasure,
  PreviewOutcome,
  PayloadEraser,
  UnreadablePayload,
} from './inbox.types';
import { ScopeBacklog, ScopeMinute } from '../common/activity';

/** Rows per bulk-replay transaction: bounded lock time and WAL per commit. */
export const BULK_REPLAY_BATCH = 500;

/** A bulk replay's dry run previews the effects of at most this many of its events (the first ones, by id). */
export const BULK_PREVIEW_MAX = 20;

/** Settled statuses an operator may send back to the worker. */
const REPLAYABLE: InboxStatus[] = ['quarantined', 'done', 'ignored'];
/** A bulk replay takes `ignored` rows only when its filter names that status. */
const BULK_REPLAYABLE: InboxStatus[] = ['quarantined', 'done'];

const REFUSALS: Record<ReplayRefusal, string> = {
  source_not_accepted: 'the endpoint refused this sender (unexpected_source): it is never replayed',
  event_type_not_accepted: "the endpoint's current eventTypes do not accept this type",
  source_facts_missing: "the row has no stored source facts to check against the endpoint's expect",
  endpoint_not_configured: 'the endpoint of this event is no longer configured',
};

type ReplayOutcome = { refused: ReplayRefusal; replayed?: never } | { refused?: never; replayed: InboxStatusChange & { auditId: string } };

export interface BulkReplayResult {
  /** Rows replayed (a dry run: rows that would be). */
  count: number;
  dryRun: boolean;
  batches: number;
  /** What ran (or would run), by status and then status reason (`none` for none). */
  byStatus: Record<string, Record<string, number>>;
  /** Rows left alone because their endpoint refuses them, by refusal. */
  refused: Partial<Record<ReplayRefusal, number>>;
  /** A dry run: the first BULK_PREVIEW_MAX ids that would run, for their effect preview. */
  previewIds?: string[];
}

/** The inbox's part of an effect preview: the event as a replay would hand it to the worker, and whether a replay may. */
export interface PreviewStart {
  event: InboxEvent;
  status: InboxStatus;
  /** Why a replay of it would be refused (`not_replayable`, `payload_purged`, an endpoint's refusal); null: it would run. */
  replayRefusal: ReplayRefusal | 'not_replayable' | 'payload_purged' | null;
  /** `not_needed`: no confirm read before its transition; `stored_reading`: previewed with the reading the worker stored last; `skipped`: previewed from the body (the preview never calls the provider). */
  confirmRead: 'not_needed' | 'stored_reading' | 'skipped';
}

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
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly processor: InboxEventProcessor,
    private readonly reads: EventReads,
  ) {}

  /**
   * The effect preview's start, read in the caller's rolled-back transaction `tx`: row `id`
   * of `tenants` as a replay would leave it for the worker. The confirm read is never made:
   * the last reading stored on the row stands in for it, or the body alone when there is none.
   */
  async previewStart(tx: UnitOfWork, id: string, tenants: TenantScope): Promise<PreviewStart | undefined> {
    const subject = await this.repository.previewSubject(tx, id, tenants);
    if (!subject) return undefined;
    const { candidate } = subject;
    let event = subject.event;
    const refusal = !REPLAYABLE.includes(candidate.status)
      ? 'not_replayable'
      : (replayRefusal(this.config.endpoints, candidate) ?? (subject.payloadPurged ? 'payload_purged' : null));
    let confirmRead: PreviewStart['confirmRead'] = 'not_needed';
    if (event.payload != null && this.reads.needsRead(event)) {
      confirmRead = subject.storedReading ? 'stored_reading' : 'skipped';
      if (subject.storedReading) event = { ...event, confirmation: subject.storedReading };
    }
    return { event, status: candidate.status, replayRefusal: refusal, confirmRead };
  }

  /** The worker's work on `event` in `tx` (InboxEventProcessor.preview): the caller reads what it wrote, then rolls back. */
  applyForPreview(tx: UnitOfWork, event: InboxEvent): Promise<PreviewOutcome> {
    return this.processor.preview(event, tx);
  }

  list(filter: InboxFilter, page: PageRequest): Promise<Page<InboxEventView>> {
    return this.repository.list(filter, page);
  }

  /**
   * One event, undefined when it does not exist or is outside `tenants` (the same
   * lookup: no payload work for another tenant's row). With `payloadReader` (an
   * operator) the payload is included and the read audited.
   */
  async get(id: string, tenants: TenantScope, payloadReader?: Actor): Promise<InboxEventView | undefined> {
    const who = payloadReader;
    if (!who) return this.repository.get(id, tenants, false);
    // The read and its audit row (who, which row, when; never the payload) commit together.
    return runInTransaction(this.dataSource, async (tx) => {
      const event = await this.repository.get(id, tenants, true, tx);
      if (!event) return undefined;
      await this.audit.record(tx, who, { action: 'inbox.payload_read', target: `inbox:${id}`, reason: 'payload read' });
      return event;
    });
  }

  /** Every processing attempt of one event, oldest first (the history its outcome statements wrote). */
  attemptsOf(id: string): Promise<InboxAttempt[]> {
    return this.repository.attemptsOf(id);
  }

  /** Accepted and done since `since`, and per endpoint the open rows and those accepted since. */
  activitySince(since: Date, tenants: TenantScope): Promise<InboxActivity> {
    return this.repository.activitySince(since, tenants);
  }

  /**
   * Re-queues one settled event with its identity unchanged. NotFoundError, or
   * ConflictError `not_replayable` (a worker holds it) / `payload_purged` (retention),
   * or a refusal of its endpoint (`source_not_accepted`, `event_type_not_accepted`,
   * `source_facts_missing`, `endpoint_not_configured`): that refusal is audited.
   */
  async replay(who: Actor, id: string, reason: string, tenants: TenantScope): Promise<InboxStatusChange & { auditId: string }> {
    const result = await runInTransaction(this.dataSource, async (tx): Promise<ReplayOutcome> => {
      const row = await this.repository.lock(tx, id, tenants);
      if (!row) throw notFound();
      if (!REPLAYABLE.includes(row.status))
        throw new ConflictError('not_replayable', `an event in status ${row.status} cannot be replayed`);
      const refused = replayRefusal(this.config.endpoints, row);
      if (refused) {
        await this.audit.record(tx, who, {
          action: 'inbox.replay_refused',
          target: `inbox:${id}`,
          reason,
          beforeStatus: row.status,
          afterStatus: row.status,
          details: { refused, statusReason: row.statusReason },
        });
        this.logger.warn({ inboxId: id, actor: who.name, refused }, 'inbox replay refused');
        return { refused };
      }
      if (row.payloadPurged) throw new ConflictError('payload_purged', 'the payload was purged by retention');
      await this.repository.replay(tx, id, this.clock.now());
      const change: InboxStatusChange = { id, before: row.status, after: 'pending' };
      const recorded = await this.audit.recordChange(tx, who, { action: 'inbox.replay', target: `inbox:${id}`, reason }, change);
      tx.afterCommit(() => this.wakeWorkers());
      this.logger.log({ inboxId: id, actor: who.name, before: change.before }, 'inbox event replayed');
      return { replayed: recorded };
    });
    // Thrown after the commit, so the refusal's audit row stays.
    if (result.refused) throw new ConflictError(result.refused, REFUSALS[result.refused]);
    return result.replayed;
  }

  /** Stops one pending event, or an in-flight one (its worker loses the fence). */
  quarantine(who: Actor, id: string, reason: string, tenants: TenantScope): Promise<InboxStatusChange & { auditId: string }> {
    return runInTransaction(this.dataSource, async (tx) => {
      const row = await this.repository.lock(tx, id, tenants);
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
   * in batches of BULK_REPLAY_BATCH ids, each batch with its own audit row. `ignored`
   * rows only when the filter names that status; a row its endpoint refuses (see
   * `replayRefusal`) is counted in `refused` by reason, audited, and left alone. A dry
   * run walks the same rows and answers what would run, by status and reason.
   */
  async bulkReplay(who: Actor, filter: InboxFilter, dryRun: boolean, reason: string): Promise<BulkReplayResult> {
    const statuses = filter.status ? REPLAYABLE.filter((s) => s === filter.status) : BULK_REPLAYABLE;
    const maxId = await this.repository.maxId();
    const result: BulkReplayResult = { count: 0, dryRun, batches: 0, byStatus: {}, refused: {} };
    const refusedIds: string[] = [];
    const pace = this.config.worker.bulkReplayPerSecond;
    /** When the first batch fell due: the pace counts from it. */
    let pacedFrom: number | undefined;
    let afterId = '0';
    for (;;) {
      const rows = await this.repository.candidates(filter, statuses, afterId, maxId, BULK_REPLAY_BATCH);
      if (rows.length === 0) break;
      afterId = rows[rows.length - 1].id;
      const ids: string[] = [];
      for (const row of rows) {
        const refused = replayRefusal(this.config.endpoints, row);
        if (refused) {
          result.refused[refused] = (result.refused[refused] ?? 0) + 1;
          refusedIds.push(row.id);
        } else {
          ids.push(row.id);
          if (dryRun) {
            tally(result.byStatus, row.status, row.statusReason);
            if ((result.previewIds ??= []).length < BULK_PREVIEW_MAX) result.previewIds.push(row.id);
          }
        }
      }
      if (dryRun) {
        result.count += ids.length;
      } else if (ids.length > 0) {
        const batch = result.batches + 1;
        const changes = await runInTransaction(this.dataSource, async (tx) => {
          // Paced: each event falls due when the ones before it would have been taken at BULK_REPLAY_PER_SECOND,
          // so the same tenant's live events (due when accepted) are claimed between them, not after all of them,
          // and a claim takes a few at a time instead of a batch's 500 at once (issue 34).
          const now = this.clock.now().getTime();
          pacedFrom ??= now;
          const due = new Date(pace > 0 ? Math.max(now, pacedFrom + (result.count * 1000) / pace) : now);
          const changed = await this.repository.replayIds(tx, filter, statuses, ids, due, pace > 0 ? 1000 / pace : 0);
          if (changed.length > 0) {
            await this.audit.record(tx, who, {
              action: 'inbox.replay_bulk',
              target: 'inbox:filter',
              reason,
              afterStatus: 'pending',
              details: { filter: describeFilter(filter), batch, ids: changed.map((c) => c.id), before: countBy(changed) },
            });
            tx.afterCommit(() => this.wakeWorkers());
          }
          return changed;
        });
        result.count += changes.length;
        for (const c of changes) tally(result.byStatus, c.before, c.beforeReason);
        result.batches = batch;
      }
      if (rows.length < BULK_REPLAY_BATCH) break;
    }
    if (!dryRun && refusedIds.length > 0) {
      await runInTransaction(this.dataSource, (tx) =>
        this.audit.record(tx, who, {
          action: 'inbox.replay_bulk_refused',
          target: 'inbox:filter',
          reason,
          details: { filter: describeFilter(filter), refused: result.refused, ids: refusedIds.slice(0, 1000) },
        }),
      );
    }
    this.logger.log(
      { actor: who.name, count: result.count, batches: result.batches, refused: refusedIds.length, dryRun },
      'bulk replay finished',
    );
    return result;
  }

  /** Accepted, done and quarantined per minute of [from, to), endpoint and tenant: for the activity rollup. */
  activityByMinute(from: Date, to: Date): Promise<ScopeMinute[]> {
    return this.repository.activityByMinute(from, to);
  }

  backlogByEndpoint(): Promise<ScopeBacklog[]> {
    return this.repository.backlogByEndpoint();
  }

  backlog(): Promise<InboxBacklog> {
    return this.repository.backlog();
  }

  stats(latencySince: Date, tenants: TenantScope): Promise<InboxStats> {
    return this.repository.stats(latencySince, tenants);
  }

  /** Throttled and best effort: a missed wake only waits for the next poll. */
  private wakeWorkers(): void {
    this.notifications.notify(INBOX_CHANNEL);
  }

  // ---- Erasure: pieces of the orders module's use case (CustomerErasureService) ----

  /** Locks rows `ids` in the caller's transaction: settled ones purged, open ones redacted; see InboxAdminRepository. */
  erasePayloads(tx: UnitOfWork, ids: string[], eraser: PayloadEraser): Promise<PayloadErasure> {
    return this.repository.erasePayloads(tx, ids, eraser);
  }

  /** One batch of stored payloads (decrypted in memory) tested with `eraser`; see InboxAdminRepository. */
  scanForErasure(
    eraser: PayloadEraser,
    tenants: string[] | null,
    afterId: string,
    limit: number,
  ): Promise<{ matched: { id: string; settled: boolean }[]; unreadable: UnreadablePayload[]; lastId: string | null }> {
    return this.repository.scanForErasure(eraser, tenants, afterId, limit);
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

function tally(into: Record<string, Record<string, number>>, status: string, reason: string | null): void {
  const byReason = (into[status] ??= {});
  const key = reason ?? 'none';
  byReason[key] = (byReason[key] ?? 0) + 1;
}

function countBy(changes: InboxStatusChange[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of changes) out[c.before] = (out[c.before] ?? 0) + 1;
  return out;
}
