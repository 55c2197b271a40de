import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isExpectationFailed } from '../common/database-errors';
import { queryPrepared } from '../database/prepared-statement';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';
import { API_VERIFIED_WITH } from '../config/load-config';
import {
  acceptMany,
  CLAIM,
  LIMITED_CLAIM,
  DEFER,
  DELETE_ABANDONED,
  DELETE_IDENTITIES,
  EXISTING_IDENTITIES,
  FINISH,
  FINISH_MANY,
  PAYLOAD_TODAY,
  PURGE_PAYLOADS,
  RECORD_FAILURE,
  RECORD_READINGS,
  STILL_HELD,
  TAKE_OVER_IGNORED,
} from './inbox.queries';
import { AcceptRequest, AcceptResult, EventIdentity, InboxEvent, InboxStatus, ProviderReading, SourceFacts } from './inbox.types';
import {
  PAYLOAD_KEYS_IN_USE,
  PAYLOAD_ROWS_BY_KEY,
  detachedDayKeys,
  payloadRowsOf,
  REENCRYPT_DAY_STORE,
  REENCRYPT_STORE,
  reencryptDayPick,
  reencryptPick,
} from './inbox.queries';
import { InboxPayloads, OpenedPayload } from './inbox-payloads';
import { IdentityKeyMode, IdentityKeys, isConflictTargetGone } from './identity-keys';
import { readDetachedDays } from './payload-days';

const PAYLOAD_MOVING: OpenedPayload = { ok: false, reason: 'payload_moving', message: 'payload being carried to a newer day' };

interface AcceptRow {
  id: string;
  source_scope: string;
  event_id: string;
  inserted: boolean;
  status: InboxStatus;
  payload_sha256: string;
  verified_with: string;
  received_at: Date;
}

/** A claim taken at the insert: the new pending rows of one acceptMany are committed as `processing` under it. */
export interface InsertClaim {
  lease: string;
  until: Date;
  /** Whether the event of this tenant and endpoint may be claimed at its insert; false: left pending (a limit covers it). */
  takes: (tenantId: string, endpointId: string) => boolean;
}

/** Per limited key (tenant or endpoint), in one order: its concurrency and its rate's tokens now (null: no such limit). */
export interface ClaimLimits {
  kinds: string[];
  names: string[];
  concurrency: (number | null)[];
  tokens: (number | null)[];
}

/** The event identity: what the unique constraint says is "the same event". */
export function identity(r: { sourceScope: string; eventId: string }): string {
  return `${r.sourceScope}\u0000${r.eventId}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The columns every inbox read starts with: which event, from where. */
export interface IdentityRow {
  id: string;
  source_scope: string;
  event_id: string;
  tenant_id: string;
  provider: string;
  endpoint_id: string;
  event_type: string;
}

interface EventRow extends IdentityRow {
  payload: unknown;
  payload_sealed: Buffer | null;
  payload_key_id: string | null;
  attempts: number;
  received_at: Date;
  trace_context: string | null;
  source_facts: SourceFacts | null;
}

interface ClaimedRow extends EventRow {
  turn: string;
  payload_moved: boolean;
}

/** The worker's and the ingestion's `webhook_inbox` SQL (the operators' is in InboxAdminRepository). */
@Injectable()
export class InboxRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly payloads: InboxPayloads,
    private readonly identityKeys: IdentityKeys,
  ) {}

  /**
   * One autocommit multi-row statement: when it resolves, every row is durably
   * committed. Rows are sorted by identity so concurrent batches lock in one order.
   * Results come back in the order of `requests`; identities must be distinct.
   */
  async acceptMany(requests: AcceptRequest[], claim?: InsertClaim): Promise<AcceptResult[]> {
    try {
      return await this.acceptUnder(await this.identityKeys.current(), requests, claim);
    } catch (error) {
      // The old id-only constraint was dropped since this instance last looked: nothing was written.
      if (!isConflictTargetGone(error)) throw error;
      this.identityKeys.forget();
      return this.acceptUnder(await this.identityKeys.current(), requests, claim);
    }
  }

  private async acceptUnder(mode: IdentityKeyMode, requests: AcceptRequest[], claim?: InsertClaim): Promise<AcceptResult[]> {
    const sorted = [...requests].sort((a, b) => compare(identity(a), identity(b)));
    const values = sorted.flatMap((r) => {
      const stored = this.payloads.store(r.sourceScope, r.eventId, r.payloadJson);
      const claimed = claim !== undefined && r.status === 'pending' && claim.takes(r.tenantId, r.endpointId);
      return [
        r.sourceScope,
        r.eventId,
        r.tenantId,
        r.provider,
        r.endpointId,
        r.eventType,
        stored.payload,
        r.payloadSha256,
        r.verifiedWith,
        claimed ? 'processing' : r.status,
        r.statusReason ?? null,
        stored.payload_sealed,
        stored.payload_key_id,
        r.traceContext ?? null,
        JSON.stringify(r.sourceFacts),
        claimed ? claim.lease : null,
        claimed ? claim.until : null,
        IdentityKeys.keyOf(mode, r.occurredAt),
      ];
    });
    // One prepared statement per batch size and conflict target.
    const timeKeyed = !mode.oldConstraint;
    const accept = () =>
      queryPrepared<AcceptRow>(
        this.dataSource,
        `inbox_accept_${timeKeyed ? 'time_' : ''}${sorted.length}`,
        acceptMany(sorted.length, timeKeyed),
        values,
      );
    const rows = await accept().catch(async (error: unknown) => {
      // Today's payload partition is missing (no start and no retention run for a week): make it, once.
      if (!isMissingPartition(error)) throw error;
      await this.dataSource.query(`SELECT webhook_inbox_payload_day(${PAYLOAD_TODAY})`);
      return accept();
    });
    const byIdentity = new Map(rows.map((row) => [identity({ sourceScope: row.source_scope, eventId: row.event_id }), row]));
    return requests.map((r) => {
      const row = byIdentity.get(identity(r))!;
      const result: AcceptResult = {
        outcome: row.inserted ? 'accepted' : 'duplicate',
        id: String(row.id),
        status: row.status,
        digestConflict:
          row.payload_sha256 !== r.payloadSha256 && row.verified_with !== API_VERIFIED_WITH && r.verifiedWith !== API_VERIFIED_WITH,
      };
      if (claim && row.inserted && row.status === 'processing') result.claimed = claimedEvent(r, row, claim.lease);
      return result;
    });
  }

  /**
   * One short autocommit statement: claims due and lease-expired rows under the claim token `lease`,
   * the tenants in turn. The events come back in turns (every tenant's first, then every second one,
   * ...), each turn in arrival order: the worker's first batches hold every tenant's first events.
   */
  async claim(lease: string, now: Date, limit: number, leaseMs: number): Promise<InboxEvent[]> {
    return this.claimed(lease, await queryPrepared<ClaimedRow>(this.dataSource, 'inbox_claim', CLAIM, [now, lease, limit, leaseMs], true));
  }

  /** The claim within each limited key's budget, in `tx`, which holds the keys' bucket rows (src/inbox/worker-limits.ts). */
  async claimLimited(tx: UnitOfWork, lease: string, now: Date, limit: number, leaseMs: number, limits: ClaimLimits): Promise<InboxEvent[]> {
    const values = [now, lease, limit, leaseMs, limits.kinds, limits.names, limits.concurrency, limits.tokens];
    return this.claimed(lease, await tx.send<ClaimedRow>({ name: 'inbox_claim_limited', text: LIMITED_CLAIM, values }));
  }

  private claimed(lease: string, rows: ClaimedRow[]): InboxEvent[] {
    // UPDATE ... RETURNING has no order.
    rows.sort((a, b) => Number(a.turn) - Number(b.turn) || compareIds(a.id, b.id));
    return rows.map((r) => {
      const opened: OpenedPayload = r.payload_moved ? PAYLOAD_MOVING : this.payloads.open(r);
      return inboxEventOf(r, opened, { lease, attempts: r.attempts, traceContext: r.trace_context });
    });
  }

  /**
   * Fenced final status, sent in the transaction of `tx` with its COMMIT (tx.send): if the lease
   * was lost, the transaction fails with LeaseLostError and nothing of it commits.
   */
  finishIn(tx: UnitOfWork, id: string, lease: string, status: 'done' | 'ignored' | 'quarantined', reason: string | null, now: Date): void {
    void tx.send({ name: 'inbox_finish', text: FINISH, values: [id, lease, status, reason, now] }, leaseLost);
  }

  /** Fenced final status in a statement of its own; false when the lease was lost. */
  async finish(id: string, lease: string, status: 'done' | 'ignored' | 'quarantined', reason: string | null, now: Date): Promise<boolean> {
    try {
      await this.dataSource.query(FINISH, [id, lease, status, reason, now]);
      return true;
    } catch (error) {
      if (isExpectationFailed(error, 'lease_lost')) return false;
      throw error;
    }
  }

  /** Fenced completion of a batch, sent in `tx` with its COMMIT; a lost lease fails the transaction with LeaseLostError. */
  finishManyIn(
    tx: UnitOfWork,
    outcomes: { id: string; status: 'done' | 'ignored' | 'quarantined'; reason: string | null }[],
    lease: string,
    now: Date,
  ): void {
    const values = [outcomes.map((o) => o.id), outcomes.map((o) => o.status), outcomes.map((o) => o.reason), now, lease];
    void tx.send({ name: 'inbox_finish_many', text: FINISH_MANY, values }, leaseLost);
  }

  /** The ids among `ids` that claim `lease` still holds. */
  async stillHeld(ids: string[], lease: string): Promise<Set<string>> {
    const rows: { id: string }[] = await this.dataSource.query(STILL_HELD, [ids, lease]);
    return new Set(rows.map((r) => String(r.id)));
  }

  /** Fenced retry bookkeeping; undefined when the lease was lost. */
  async recordFailure(
    id: string,
    lease: string,
    error: string,
    nextAttemptAt: Date,
    maxAttempts: number,
    now: Date,
  ): Promise<{ status: InboxStatus; attempts: number } | undefined> {
    const rows: { status: InboxStatus; attempts: number }[] = await this.dataSource.query(RECORD_FAILURE, [
      id,
      lease,
      error,
      nextAttemptAt,
      maxAttempts,
      now,
    ]);
    return rows[0];
  }

  /**
   * The identities among `ids` the inbox already holds, as identity() keys. `takeableBy`: an
   * endpoint whose own copy may take over rows others stored `ignored` (those do not count).
   */
  async existing(ids: EventIdentity[], takeableBy?: string): Promise<Set<string>> {
    const mode = await this.identityKeys.current();
    const rows: { source_scope: string; event_id: string }[] = await this.dataSource.query(EXISTING_IDENTITIES, [
      ids.map((i) => i.sourceScope),
      ids.map((i) => i.eventId),
      ids.map((i) => IdentityKeys.keyOf(mode, i.occurredAt)),
      takeableBy ?? null,
    ]);
    return new Set(rows.map((r) => identity({ sourceScope: r.source_scope, eventId: r.event_id })));
  }

  /** Stores confirm reads on the events still held by `lease`. */
  async recordReadings(lease: string, readings: { id: string; reading: ProviderReading }[]): Promise<void> {
    await this.dataSource.query(RECORD_READINGS, [readings.map((r) => r.id), readings.map((r) => JSON.stringify(r.reading)), lease]);
  }

  /** Back to pending without an attempt (`waiting`: an early event); resolves with the ids that were still held. */
  async defer(lease: string, deferrals: { id: string; until: Date; why: string }[], waiting = false): Promise<Set<string>> {
    const [rows]: [{ id: string }[], number] = await this.dataSource.query(DEFER, [
      deferrals.map((d) => d.id),
      deferrals.map((d) => d.until),
      deferrals.map((d) => d.why),
      lease,
      waiting ? 'waiting' : null,
    ]);
    return new Set(rows.map((r) => String(r.id)));
  }

  // ---- Retention: one bounded batch per call, each its own autocommit statement ----

  /** Purges up to `limit` payloads of settled events received before `before`; returns how many. */
  async purgePayloads(before: Date, limit: number): Promise<number> {
    const [, count]: [unknown, number] = await this.dataSource.query(PURGE_PAYLOADS, [before, limit]);
    return count;
  }

  /** Deletes up to `limit` settled identities received before `before`; returns how many. */
  async deleteIdentities(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(DELETE_IDENTITIES, [before, limit]);
    return rows[0].n;
  }

  /**
   * TAKE_OVER_IGNORED: whether `request`'s copy took over the ignored row `id`. A transaction of its
   * own, answered as an accept is: its lock waited for 2 s at most, and its commit checked like the
   * accept's (a webhook answered 200 must find the row pending after a failover).
   */
  async takeOverIgnored(request: AcceptRequest, id: string): Promise<boolean> {
    const stored = this.payloads.store(request.sourceScope, request.eventId, request.payloadJson);
    const values = [
      id,
      request.endpointId,
      JSON.stringify(request.sourceFacts),
      request.verifiedWith,
      request.payloadSha256,
      stored.payload,
      stored.payload_sealed,
      stored.payload_key_id,
      request.traceContext ?? null,
      request.eventType,
    ];
    const taken = () =>
      runInTransaction(this.dataSource, async (uow): Promise<{ id: string }[]> => {
        await uow.query(`SELECT set_config('lock_timeout', '2s', true)`);
        return uow.query(TAKE_OVER_IGNORED, values);
      });
    const rows = await taken().catch(async (error: unknown) => {
      if (!isMissingPartition(error)) throw error;
      await this.dataSource.query(`SELECT webhook_inbox_payload_day(${PAYLOAD_TODAY})`);
      return taken();
    });
    return rows.length === 1;
  }

  async deleteAbandoned(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(DELETE_ABANDONED, [before, limit]);
    return rows[0].n;
  }

  // ---- Payload keys (start check, admin, the re-encryption job) ----

  // Each reads the detached days first: a carry that moves a payload from one to today's day in
  // between is then seen in today's, where the second read looks, not missed by both.

  /** Key ids stored payloads are sealed with; `null` in the list when clear payloads remain. */
  async payloadKeysInUse(): Promise<(string | null)[]> {
    const detached = await this.detachedPayloadKeys();
    const rows: { key_id: string | null }[] = await this.dataSource.query(PAYLOAD_KEYS_IN_USE);
    return [...new Set([...rows.map((r) => r.key_id), ...detached.map((d) => d.keyId)])];
  }

  async payloadRowsByKey(): Promise<{ keyId: string | null; rows: number }[]> {
    const detached = await this.detachedPayloadKeys();
    const rows: { key_id: string | null; n: string }[] = await this.dataSource.query(PAYLOAD_ROWS_BY_KEY);
    const byKey = new Map(rows.map((r) => [r.key_id, Number(r.n)]));
    for (const { keyId, rows: n } of detached) byKey.set(keyId, (byKey.get(keyId) ?? 0) + n);
    return [...byKey].map(([keyId, n]) => ({ keyId, rows: n }));
  }

  /** Stored payloads under `keyId` (null: clear ones). */
  async payloadRowsOf(keyId: string | null): Promise<number> {
    const detached = (await this.detachedPayloadKeys()).filter((d) => d.keyId === keyId);
    const rows: { n: string }[] = await this.dataSource.query(payloadRowsOf(keyId === null), keyId === null ? [] : [keyId]);
    return Number(rows[0].n) + detached.reduce((sum, d) => sum + d.rows, 0);
  }

  /**
   * The open rows' payloads in days detached and not yet dropped. The partitioned table no longer
   * shows them, yet the next forgetting run carries them to today sealed as they are: their key
   * stays in use.
   */
  private async detachedPayloadKeys(): Promise<{ keyId: string | null; rows: number }[]> {
    const rows = await readDetachedDays<{ key_id: string | null; n: string }>(this.dataSource, detachedDayKeys);
    return rows.map((r) => ({ keyId: r.key_id, rows: Number(r.n) }));
  }

  /**
   * One short transaction: locks up to `limit` payloads stored under `fromKey` (null: clear)
   * after the cursor `afterId`, seals each with the current key and stores it. Legacy rows
   * first (the cursor an inbox id), then the days' payloads (the cursor `day/inbox id`). A
   * payload that does not open is left as it is (the worker quarantines it when it meets it).
   * Returns the cursor of the last payload looked at (the next batch starts after it), or
   * null when none was left.
   */
  async reencryptBatch(
    fromKey: string | null,
    afterId: string,
    limit: number,
  ): Promise<{ lastId: string | null; resealed: number; unreadable: number }> {
    const clear = fromKey === null;
    const key = clear ? [] : [fromKey];
    return runInTransaction(this.dataSource, async (tx) => {
      let rows: (EventRow & { payload_text: string | null; day?: string })[] = [];
      if (!afterId.includes('/')) {
        rows = await tx.query(reencryptPick(clear), [afterId, limit, ...key]);
        if (rows.length > 0)
          return this.reseal(tx, rows, (sealed) => [REENCRYPT_STORE, [sealed.ids, sealed.seals, this.payloads.currentKeyId]]);
        afterId = '0001-01-01/0';
      }
      const [day, id] = afterId.split('/');
      rows = await tx.query(reencryptDayPick(clear), [day, limit, id, ...key]);
      return this.reseal(tx, rows, (sealed) => [REENCRYPT_DAY_STORE, [sealed.days, sealed.ids, sealed.seals, this.payloads.currentKeyId]]);
    });
  }

  private async reseal(
    tx: UnitOfWork,
    rows: (EventRow & { payload_text: string | null; day?: string })[],
    store: (sealed: { days: string[]; ids: string[]; seals: Buffer[] }) => [string, unknown[]],
  ): Promise<{ lastId: string | null; resealed: number; unreadable: number }> {
    const sealed = { days: [] as string[], ids: [] as string[], seals: [] as Buffer[] };
    for (const row of rows) {
      const text = row.payload_text !== null ? { ok: true as const, payload: row.payload_text } : this.payloads.openSealed(row);
      if (!text.ok) continue;
      sealed.days.push(row.day ?? '');
      sealed.ids.push(String(row.id));
      sealed.seals.push(this.payloads.store(row.source_scope, row.event_id, text.payload as string).payload_sealed!);
    }
    if (sealed.ids.length > 0) await tx.query(...store(sealed));
    const last = rows[rows.length - 1];
    const lastId = !last ? null : last.day !== undefined ? `${last.day}/${last.id}` : String(last.id);
    return { lastId, resealed: sealed.ids.length, unreadable: rows.length - sealed.ids.length };
  }
}

/** The event as a claim would have read it back: the payload as stored (after `omit`), no attempt yet. */
/** A row as the worker is handed it: its payload opened (or why it could not be), under `claim`. */
export function inboxEventOf(
  r: Omit<IdentityRow, 'id'> & { id: string | number; received_at: Date; source_facts: SourceFacts | null },
  opened: OpenedPayload,
  claim: { lease: string; attempts: number; traceContext: string | null },
): InboxEvent {
  return {
    id: String(r.id),
    sourceScope: r.source_scope,
    eventId: r.event_id,
    tenantId: r.tenant_id,
    provider: r.provider,
    endpointId: r.endpoint_id,
    eventType: r.event_type,
    payload: opened.ok ? opened.payload : undefined,
    unreadable: opened.ok ? undefined : { reason: opened.reason, message: opened.message },
    attempts: claim.attempts,
    receivedAt: r.received_at,
    sourceFacts: r.source_facts,
    lease: claim.lease,
    traceContext: claim.traceContext,
  };
}

function claimedEvent(r: AcceptRequest, row: AcceptRow, lease: string): InboxEvent {
  return {
    id: String(row.id),
    sourceScope: r.sourceScope,
    eventId: r.eventId,
    tenantId: r.tenantId,
    provider: r.provider,
    endpointId: r.endpointId,
    eventType: r.eventType,
    payload: JSON.parse(r.payloadJson),
    attempts: 0,
    receivedAt: row.received_at,
    sourceFacts: r.sourceFacts,
    lease,
    traceContext: r.traceContext ?? null,
  };
}

/** 23514 "no partition of relation ... found for row": an insert into a day no partition holds. */
function isMissingPartition(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e.code === '23514' && /no partition of relation/.test(e.message ?? '');
}

/** A fenced completion found a lease taken over: another claim owns the event now (for a batch, stillHeld() says which). */
export class LeaseLostError extends Error {
  constructor() {
    super('lease_lost');
  }
}

function leaseLost(error: unknown): unknown {
  return isExpectationFailed(error, 'lease_lost') ? new LeaseLostError() : error;
}

/** Numeric order of two bigint ids as pg returns them (decimal strings), without a BigInt per comparison. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
