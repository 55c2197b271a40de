import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Page, PageRequest, queryPage, SqlWhere } from '../common/pagination';
import { ROW_IN_SCOPE, TenantScope } from '../common/tenant-scope';
import {
  ADMIN_BACKLOG,
  ADMIN_LOCK,
  ADMIN_PAYLOAD_PURGED,
  ADMIN_PAYLOAD_COLUMNS,
  ADMIN_PREVIEW_ROW,
  ADMIN_QUARANTINE,
  ADMIN_REPLAY,
  ADMIN_STATS_ATTEMPTS,
  ADMIN_STATS_BY_STATUS,
  ADMIN_STATS_FAILURES,
  ADMIN_STATS_LATENCY,
  ADMIN_STATS_OLDEST_PENDING,
  ADMIN_VIEW_COLUMNS,
  adminLockBatch,
  adminReplayBatch,
  ADMIN_ACTIVITY,
  ADMIN_ACTIVITY_BY_ENDPOINT,
  ACTIVITY_BY_MINUTE,
  BACKLOG_BY_ENDPOINT,
  ATTEMPTS_OF_EVENT,
  ERASE_PAYLOADS,
  ERASURE_LOCK,
  ERASURE_READ,
  ERASURE_DAY_SCAN,
  erasureDetachedScan,
  ERASURE_SCAN,
  REDACT_PAYLOADS,
} from './inbox-admin.queries';
import { ScopeBacklog, ScopeMinute, toScopeBacklogs } from '../common/activity';
import { payloadKept } from './inbox.queries';
import { readDetachedDays } from './payload-days';
import { InboxPayloads, StoredPayload } from './inbox-payloads';
import { ReplayCandidate } from './acceptance';
import { IdentityRow, inboxEventOf } from './inbox.repository';
import { PayloadErasure, PayloadEraser, UnreadablePayload } from './inbox.types';
import {
  InboxActivity,
  InboxAttempt,
  InboxBacklog,
  InboxEventView,
  InboxFilter,
  InboxStats,
  InboxStatus,
  InboxEvent,
  InboxStatusChange,
  ProviderReading,
  SourceFacts,
} from './inbox.types';
import { UnitOfWork } from '../database/unit-of-work';

/** The erasure scan's day phase starts at this cursor: before every day's payloads. */
const DAY_SCAN_START = '0001-01-01/0';

/** The operators' `webhook_inbox` SQL: lists, repairs, backlog and stats (never on the worker's path). */
@Injectable()
export class InboxAdminRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly payloads: InboxPayloads,
  ) {}

  async list(filter: InboxFilter, page: PageRequest): Promise<Page<InboxEventView>> {
    const query = { columns: ADMIN_VIEW_COLUMNS, table: 'webhook_inbox', orderBy: 'received_at', where: inboxFilterWhere(filter) };
    return queryPage(this.dataSource, query, page, toView);
  }

  /**
   * One row of `tenants` (undefined: any); the tenant is part of the lookup, so no other tenant's
   * payload is read. In `tx` when given: an audited read holds one pooled connection, not two.
   */
  async get(id: string, tenants: TenantScope, withPayload: boolean, tx?: UnitOfWork): Promise<InboxEventView | undefined> {
    const rows: AdminRow[] = await (tx ?? this.dataSource).query(
      `SELECT ${ADMIN_VIEW_COLUMNS}${withPayload ? `, ${ADMIN_PAYLOAD_COLUMNS}` : ''} FROM webhook_inbox WHERE ${ROW_IN_SCOPE}`,
      [id, tenants ?? null],
    );
    const row = rows[0];
    if (!row) return undefined;
    const view = toView(row);
    if (withPayload) {
      // Opened in memory for this answer only; a payload that does not open is reported, never guessed.
      const opened = this.payloads.open({ ...row, payload: row.payload, payload_sealed: row.payload_sealed ?? null });
      view.payload = opened.ok ? opened.payload : null;
      if (!opened.ok) view.payloadUnreadable = opened.reason;
    }
    return view;
  }

  async attemptsOf(id: string): Promise<InboxAttempt[]> {
    return this.dataSource.query(ATTEMPTS_OF_EVENT, [id]);
  }

  async activitySince(since: Date, tenants: readonly string[] | undefined): Promise<InboxActivity> {
    const [[totals], byEndpoint] = await Promise.all([
      this.dataSource.query(ADMIN_ACTIVITY, [since, tenants ?? null]) as Promise<{ accepted: number; done: number }[]>,
      this.dataSource.query(ADMIN_ACTIVITY_BY_ENDPOINT, [since, tenants ?? null]) as Promise<
        { endpoint_id: string; pending: number; processing: number; quarantined: number; accepted: number }[]
      >,
    ]);
    return {
      accepted: totals.accepted,
      done: totals.done,
      byEndpoint: byEndpoint.map((r) => ({
        endpoint: r.endpoint_id,
        pending: r.pending,
        processing: r.processing,
        quarantined: r.quarantined,
        accepted: r.accepted,
      })),
    };
  }

  /** Locks the row for an admin change in `tx`; undefined when it does not exist or is not of `tenants`. */
  async lock(tx: UnitOfWork, id: string, tenants: TenantScope): Promise<(ReplayCandidate & { payloadPurged: boolean }) | undefined> {
    const rows: CandidateRow[] = await tx.query(ADMIN_LOCK, [id, tenants ?? null]);
    if (!rows[0]) return undefined;
    const [{ payload_purged }]: { payload_purged: boolean }[] = await tx.query(ADMIN_PAYLOAD_PURGED, [id]);
    return { ...toCandidate(rows[0]), payloadPurged: payload_purged };
  }

  /**
   * Row `id` of `tenants` as a claim after a replay would hand it to the worker (attempts 0, payload
   * opened), with what the replay decision needs and its last stored confirm reading; read in `tx`.
   */
  async previewSubject(tx: UnitOfWork, id: string, tenants: TenantScope): Promise<PreviewSubject | undefined> {
    const rows: (CandidateRow & PreviewRow)[] = await tx.query(ADMIN_PREVIEW_ROW, [id, tenants ?? null]);
    const r = rows[0];
    if (!r) return undefined;
    const opened = this.payloads.open({ ...r, payload_sealed: r.payload_sealed ?? null });
    const event = inboxEventOf(r, opened, { lease: 'effect-preview', attempts: 0, traceContext: null });
    return { event, candidate: toCandidate(r), payloadPurged: r.payload_purged, storedReading: r.confirmation ?? undefined };
  }

  async replay(tx: UnitOfWork, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_REPLAY, [id, now]);
  }

  async quarantine(tx: UnitOfWork, id: string, now: Date): Promise<void> {
    await tx.query(ADMIN_QUARANTINE, [id, now]);
  }

  /** Rows matching the filter after `afterId` up to `maxId`, ascending, with what a replay decision needs (read without locks). */
  async candidates(
    filter: InboxFilter,
    statuses: InboxStatus[],
    afterId: string,
    maxId: string,
    limit: number,
  ): Promise<(ReplayCandidate & { id: string })[]> {
    const where = inboxFilterWhere(filter)
      .add('status = ANY(?::text[])', statuses)
      .add(payloadKept('webhook_inbox'))
      .add('id > ?::bigint AND id <= ?::bigint', afterId, maxId);
    const n = where.param(limit);
    const rows: (CandidateRow & { id: string })[] = await this.dataSource.query(
      `SELECT id, status, status_reason, endpoint_id, event_type, source_facts
         FROM webhook_inbox ${where.sql()} ORDER BY id LIMIT ${n}`,
      where.params,
    );
    return rows.map((r) => ({ id: String(r.id), ...toCandidate(r) }));
  }

  async maxId(): Promise<string> {
    const rows: { max: string | null }[] = await this.dataSource.query('SELECT max(id)::text AS max FROM webhook_inbox');
    return rows[0].max ?? '0';
  }

  /** Replays the given ids in `tx` where they still match, due from `due` one every `stepMs` (0: all at once); returns what changed. */
  async replayIds(
    tx: UnitOfWork,
    filter: InboxFilter,
    statuses: InboxStatus[],
    ids: string[],
    due: Date,
    stepMs = 0,
  ): Promise<(InboxStatusChange & { beforeReason: string | null })[]> {
    const where = inboxFilterWhere(filter).add('status = ANY(?::text[])', statuses);
    const idsParam = where.param(ids);
    await tx.query(adminLockBatch(where.sql(), idsParam), [...where.params]);
    const dueParam = where.param(due);
    const stepParam = where.param(stepMs);
    const [rows]: [{ id: string; before: InboxStatus; before_reason: string | null }[], number] = await tx.query(
      adminReplayBatch(where.sql(), idsParam, dueParam, stepParam),
      where.params,
    );
    return rows.map((r) => ({ id: String(r.id), before: r.before, beforeReason: r.before_reason, after: 'pending' as const }));
  }

  /**
   * One batch of the erasure scan: stored payloads after `afterId` (of `tenants`, or
   * all), opened in memory and tested with `eraser`; the plaintext leaves this method
   * only as the verdict. A payload that does not open or walk is reported, never
   * skipped in silence. `lastId` is the last id looked at (null: the end).
   */
  async scanForErasure(
    eraser: PayloadEraser,
    tenants: string[] | null,
    afterId: string,
    limit: number,
  ): Promise<{ matched: { id: string; settled: boolean }[]; unreadable: UnreadablePayload[]; lastId: string | null }> {
    // Legacy rows first (the cursor an inbox id), then the days' payloads (the cursor `day/inbox id`).
    let rows: ErasureRow[] = [];
    const unreadable: UnreadablePayload[] = [];
    if (!afterId.includes('/')) {
      rows = await this.dataSource.query(ERASURE_SCAN, [afterId, limit, tenants]);
      if (rows.length === 0) afterId = DAY_SCAN_START;
    }
    // Payloads waiting in a detached day (a row held at the carry) are read before the day scan
    // starts, and again after it ends: one carried to today behind the scan's cursor was in the
    // detached day at the start; one detached during the scan is there at the end.
    if (afterId === DAY_SCAN_START) unreadable.push(...(await this.inDetachedDays(eraser, tenants)));
    if (afterId.includes('/')) {
      const [day, id] = afterId.split('/');
      rows = await this.dataSource.query(ERASURE_DAY_SCAN, [day, limit, tenants, id]);
    }
    const matched: { id: string; settled: boolean }[] = [];
    for (const row of rows) {
      const verdict = this.tryOn(row, (payload) => eraser.matches({ tenantId: row.tenant_id, settled: isSettled(row), payload }));
      if (!verdict.ok) unreadable.push(verdict.unreadable);
      else if (verdict.value) matched.push({ id: String(row.id), settled: isSettled(row) });
    }
    if (afterId.includes('/') && rows.length < limit) unreadable.push(...(await this.inDetachedDays(eraser, tenants)));
    const last = rows[rows.length - 1];
    return { matched, unreadable, lastId: !last ? null : last.day != null ? `${last.day}/${last.id}` : String(last.id) };
  }

  /**
   * Open rows whose payloads wait in a day detached and not yet dropped (rare: a row held at the
   * carry after the detach; the next forgetting run, within a minute, carries them to today). They cannot be redacted there, so a mention among them is reported
   * (`payload_day_being_forgotten`) and the erasure is incomplete until it is run again.
   */
  private async inDetachedDays(eraser: PayloadEraser, tenants: string[] | null): Promise<UnreadablePayload[]> {
    const found: UnreadablePayload[] = [];
    for (const row of await readDetachedDays<ErasureRow>(this.dataSource, erasureDetachedScan, [tenants])) {
      const verdict = this.tryOn(row, (payload) => eraser.matches({ tenantId: row.tenant_id, settled: false, payload }));
      if (!verdict.ok) found.push(verdict.unreadable);
      else if (verdict.value) found.push({ id: String(row.id), keyId: row.payload_key_id, reason: 'payload_day_being_forgotten' });
    }
    return found;
  }

  /**
   * Erasure, in the caller's transaction: locks the rows `ids` and decides from their
   * status now. Settled rows lose their payload; open ones (pending, processing,
   * quarantined) keep it with `eraser.redact` applied and stored in the row's form
   * (re-sealed with the current key), so their work still runs.
   */
  async erasePayloads(tx: UnitOfWork, ids: string[], eraser: PayloadEraser): Promise<PayloadErasure> {
    const result: PayloadErasure = { purged: [], redacted: [], unreadable: [] };
    if (ids.length === 0) return result;
    await tx.query(ERASURE_LOCK, [ids]);
    const rows: ErasureRow[] = await tx.query(ERASURE_READ, [ids]);
    const settled: string[] = [];
    const redacted: { id: string; day: string | null; stored: StoredPayload }[] = [];
    for (const row of rows) {
      if (isSettled(row)) {
        settled.push(String(row.id));
        continue;
      }
      const change = this.tryOn(row, (payload) => {
        const { payload: after, replaced } = eraser.redact(payload);
        if (replaced === 0) return undefined;
        const json = JSON.stringify(after);
        return row.payload_sealed === null
          ? { payload: json, payload_sealed: null, payload_key_id: null }
          : this.payloads.store(row.source_scope, row.event_id, json);
      });
      if (!change.ok) result.unreadable.push(change.unreadable);
      else if (change.value) redacted.push({ id: String(row.id), day: row.day ?? null, stored: change.value });
    }
    if (settled.length > 0) {
      const purged: { id: string }[] = await tx.query(ERASE_PAYLOADS, [settled]);
      result.purged = purged.map((r) => String(r.id));
    }
    if (redacted.length > 0) {
      const changed: { id: string }[] = await tx.query(REDACT_PAYLOADS, [
        redacted.map((r) => r.id),
        redacted.map((r) => r.stored.payload),
        redacted.map((r) => r.stored.payload_sealed),
        redacted.map((r) => r.stored.payload_key_id),
        redacted.map((r) => r.day),
      ]);
      result.redacted = changed.map((r) => String(r.id));
    }
    return result;
  }

  /** Runs `use` on a row's parsed payload; a payload that does not open, parse or walk is reported instead. */
  private tryOn<T>(row: ErasureRow, use: (payload: unknown) => T): { ok: true; value: T } | { ok: false; unreadable: UnreadablePayload } {
    const unreadable = (reason: string) => ({ ok: false as const, unreadable: { id: String(row.id), keyId: row.payload_key_id, reason } });
    let text = row.payload_text;
    if (text === null) {
      const opened = this.payloads.openSealed(row);
      if (!opened.ok) return unreadable(opened.reason);
      text = opened.payload as string;
    }
    try {
      return { ok: true, value: use(JSON.parse(text)) };
    } catch {
      return unreadable('payload_unwalkable');
    }
  }

  async activityByMinute(from: Date, to: Date): Promise<ScopeMinute[]> {
    const rows: { minute: Date; scope: string; tenant_id: string; accepted: number; done: number; quarantined: number }[] =
      await this.dataSource.query(ACTIVITY_BY_MINUTE, [from, to]);
    return rows.map((r) => ({
      minute: r.minute,
      scope: r.scope,
      tenantId: r.tenant_id,
      counts: { accepted: r.accepted, done: r.done, quarantined: r.quarantined },
    }));
  }

  async backlogByEndpoint(): Promise<ScopeBacklog[]> {
    return toScopeBacklogs(await this.dataSource.query(BACKLOG_BY_ENDPOINT));
  }

  async backlog(): Promise<InboxBacklog> {
    const rows: { status: string; n: number; oldest: Date | null; waiting: number | null }[] = await this.dataSource.query(ADMIN_BACKLOG);
    const by = new Map(rows.map((r) => [r.status, r]));
    return {
      pending: by.get('pending')?.n ?? 0,
      processing: by.get('processing')?.n ?? 0,
      quarantined: by.get('quarantined')?.n ?? 0,
      waiting: by.get('pending')?.waiting ?? 0,
      oldestPendingReceivedAt: by.get('pending')?.oldest ?? null,
    };
  }

  async stats(latencySince: Date, tenants: readonly string[] | undefined): Promise<InboxStats> {
    const scope = [tenants ?? null];
    const [byStatus, oldest, attempts, failures, latency] = await Promise.all([
      this.dataSource.query(ADMIN_STATS_BY_STATUS, scope) as Promise<{ status: string; n: number }[]>,
      this.dataSource.query(ADMIN_STATS_OLDEST_PENDING, scope) as Promise<{ oldest: Date | null; waiting: number }[]>,
      this.dataSource.query(ADMIN_STATS_ATTEMPTS, scope) as Promise<{ retrying: number; max_attempts: number }[]>,
      this.dataSource.query(ADMIN_STATS_FAILURES, scope) as Promise<{ provider: string; type: string; error: string; n: number }[]>,
      this.dataSource.query(ADMIN_STATS_LATENCY, [latencySince, tenants ?? null]) as Promise<{ completed: number; p: number[] | null }[]>,
    ]);
    const p = latency[0].p;
    return {
      byStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
      waiting: oldest[0].waiting,
      oldestPendingReceivedAt: oldest[0].oldest,
      retrying: attempts[0].retrying,
      maxAttempts: attempts[0].max_attempts,
      recurringFailures: failures.map((f) => ({ provider: f.provider, type: f.type, error: f.error, count: f.n })),
      latency: { completed: latency[0].completed, p50: p?.[0] ?? null, p95: p?.[1] ?? null, p99: p?.[2] ?? null },
    };
  }
}

interface ErasureRow {
  id: string;
  tenant_id: string;
  status: InboxStatus;
  source_scope: string;
  event_id: string;
  payload_text: string | null;
  payload_sealed: Buffer | null;
  payload_key_id: string | null;
  /** The payload's day (YYYY-MM-DD); null for a legacy row, whose payload is in the row. */
  day?: string | null;
}

function isSettled(row: { status: InboxStatus }): boolean {
  return row.status === 'done' || row.status === 'ignored';
}

/** What the effect preview starts from (InboxAdminRepository.previewSubject). */
export interface PreviewSubject {
  event: InboxEvent;
  candidate: ReplayCandidate;
  payloadPurged: boolean;
  /** The confirm reading the worker stored at the row's last processing, if any. */
  storedReading?: ProviderReading;
}

interface PreviewRow extends IdentityRow {
  payload: unknown;
  payload_sealed: Buffer | null;
  payload_key_id: string | null;
  received_at: Date;
  confirmation: ProviderReading | null;
  payload_purged: boolean;
}

interface CandidateRow {
  status: InboxStatus;
  status_reason: string | null;
  endpoint_id: string;
  event_type: string;
  source_facts: SourceFacts | null;
}

function toCandidate(r: CandidateRow): ReplayCandidate {
  return {
    status: r.status,
    statusReason: r.status_reason,
    endpointId: r.endpoint_id,
    eventType: r.event_type,
    sourceFacts: r.source_facts,
  };
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
  payload_key_id: string | null;
  payload_purged: boolean;
  payload?: unknown;
  payload_sealed?: Buffer | null;
  page_at_us: string;
}

function inboxFilterWhere(f: InboxFilter): SqlWhere {
  const w = new SqlWhere();
  if (f.status) w.add('status = ?', f.status);
  if (f.provider) w.add('provider = ?', f.provider);
  if (f.type) w.add('event_type = ?', f.type);
  if (f.tenant) w.add('tenant_id = ?', f.tenant);
  if (f.tenants) w.add('tenant_id = ANY(?::text[])', f.tenants);
  if (f.endpoint) w.add('endpoint_id = ?', f.endpoint);
  if (f.from) w.add('received_at >= ?', f.from);
  if (f.to) w.add('received_at < ?', f.to);
  return w;
}

function toView(r: AdminRow): InboxEventView {
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
    payloadKeyId: r.payload_key_id,
    payloadPurged: r.payload_purged,
  };
  return view;
}
