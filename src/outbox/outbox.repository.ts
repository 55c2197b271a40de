import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OperationOutcome, OutboxEntry } from './destinations/destination';
import { DestinationState } from './destinations/destination-gate';
import {
  CLAIM_OUTBOX,
  ENSURE_DESTINATIONS,
  ERASE_RECIPIENTS,
  ERASED_AMONG,
  HANDED_OUTBOX,
  PRUNE_ABANDONED,
  PRUNE_DELIVERED,
  READ_DESTINATIONS,
  RECORD_OUTCOMES,
  WRITE_DESTINATION,
} from './outbox.queries';
import { queryPrepared } from '../database/prepared-statement';
import { UnitOfWork } from '../database/unit-of-work';
import { OUTBOX_ERASURE_CHANNEL, OutboxStatus } from './outbox.types';

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
  /** For the attempt history: how long the outcome query and the request took. */
  durationMs?: number;
  /** For the attempt history: what the outcome query answered, when it was asked. */
  outcomeQuery?: OperationOutcome;
  /** For the attempt history: the delay the destination asked for. */
  retryAfterMs?: number;
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
  trace_context: string | null;
  aggregate: string | null;
  held: boolean;
}

/** What one claim took: entries to send, and how many it found held behind an earlier entry of their aggregate. */
export interface Claim {
  entries: OutboxEntry[];
  held: { destination: string }[];
}

/** How long a held entry waits before the claim looks at it again, unless a delivery releases it first. */
export const HOLD_RECHECK_MS = 30_000;

/** Owner of the relay's `outbox` SQL: claim, fenced outcome recording, the destinations' shared state. */
@Injectable()
export class OutboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * One autocommit statement: the claim is committed (and every row lock released) when it returns.
   * `budgets`: how many entries each destination may take this round; `scan`: rows looked at per destination;
   * `passedOver`: tenants whose due entries this claim leaves, by destination.
   */
  async claim(
    relayId: string,
    now: Date,
    leaseMs: number,
    budgets: Map<string, number>,
    scan: number,
    passedOver: Map<string, string[]> = new Map(),
  ): Promise<Claim> {
    const pairs = [...passedOver].flatMap(([destination, tenants]) => tenants.map((tenant) => [destination, tenant]));
    const rows = await queryPrepared<ClaimedRow>(this.dataSource, 'outbox_claim', CLAIM_OUTBOX, [
      now,
      relayId,
      leaseMs,
      [...budgets.keys()],
      [...budgets.values()],
      scan,
      HOLD_RECHECK_MS,
      pairs.map(([destination]) => destination),
      pairs.map(([, tenant]) => tenant),
    ]);
    const claim: Claim = { entries: [], held: [] };
    for (const r of rows) {
      if (r.held) {
        claim.held.push({ destination: r.destination });
        continue;
      }
      claim.entries.push(toEntry(r));
    }
    return claim;
  }

  /**
   * The entries the writer committed handed over under `lease` (see INSERT_OUTBOX), sent in the
   * transaction of `tx` just before its COMMIT (transaction.ts: beforeCommit): answered once it commits.
   */
  handedIn(tx: UnitOfWork, lease: string): Promise<OutboxEntry[]> {
    return tx.send<ClaimedRow>({ name: 'outbox_handed', text: HANDED_OUTBOX, values: [lease] }).then((rows) => rows.map(toEntry));
  }

  // ---- Destination state (circuit, pause, rate limit) ----

  async ensureDestinations(names: string[]): Promise<void> {
    await this.dataSource.query(ENSURE_DESTINATIONS, [names]);
  }

  async readDestinations(names: string[]): Promise<DestinationState[]> {
    const rows = await queryPrepared<DestinationRow>(this.dataSource, 'outbox_read_destinations', READ_DESTINATIONS, [names], true);
    return rows.map(toDestinationState);
  }

  /** Writes `next` if the row is still at `version`; false: another relay wrote it first. */
  async writeDestination(next: DestinationState, version: number): Promise<boolean> {
    const [, count] = (await this.dataSource.query(WRITE_DESTINATION, [
      next.destination,
      next.circuit,
      next.failures,
      next.retryAt,
      next.probeUntil,
      next.pausedUntil,
      next.tokens,
      next.tokensAt,
      next.lastError?.slice(0, 500) ?? null,
      next.changedAt,
      version,
    ])) as [unknown, number];
    return count === 1;
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
      outcomes.map((o) => (o.durationMs === undefined ? null : Math.round(o.durationMs))),
      outcomes.map((o) => o.outcomeQuery ?? null),
      outcomes.map((o) => (o.retryAfterMs === undefined ? null : Math.min(Math.round(o.retryAfterMs), 2_147_483_647))),
    ]);
    return new Set(rows.map((r) => String(r.id)));
  }

  /** Retention: deletes up to `limit` entries delivered before `before` in one autocommit statement. */
  async pruneDelivered(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(PRUNE_DELIVERED, [before, limit]);
    return rows[0].n;
  }

  /** The ids among `ids` whose e-mail recipient an erasure blanked (ERASED_AMONG). */
  async erasedAmong(ids: string[]): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(ERASED_AMONG, [ids]);
    return rows.map((r) => String(r.id));
  }

  /** Retention: deletes up to `limit` dead or unresolved entries created before `before` (see PRUNE_ABANDONED). */
  async pruneAbandoned(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(PRUNE_ABANDONED, [before, limit]);
    return rows[0].n;
  }

  /** Erasure, in the caller's transaction: see ERASE_RECIPIENTS. */
  async eraseRecipients(tx: UnitOfWork, operationKeys: string[]): Promise<{ entries: number; blanked: number; sourceEventIds: string[] }> {
    const rows: { id: string; source_event_id: string | null; blanked: boolean }[] = await tx.query(ERASE_RECIPIENTS, [operationKeys]);
    // Sent at the commit, to every relay (this instance's too): a copy one already claimed is not sent.
    if (rows.some((r) => r.blanked)) await tx.query(`SELECT pg_notify($1, '')`, [OUTBOX_ERASURE_CHANNEL]);
    return {
      entries: rows.length,
      blanked: rows.filter((r) => r.blanked).length,
      sourceEventIds: [...new Set(rows.flatMap((r) => (r.source_event_id === null ? [] : [String(r.source_event_id)])))],
    };
  }
}

interface DestinationRow {
  destination: string;
  circuit: DestinationState['circuit'];
  failures: number;
  retry_at: Date | null;
  probe_until: Date | null;
  paused_until: Date | null;
  tokens: number | null;
  tokens_at: Date | null;
  last_error: string | null;
  changed_at: Date | null;
  version: string;
}

function toEntry(r: ClaimedRow): OutboxEntry {
  return {
    id: String(r.id),
    operationKey: r.operation_key,
    destination: r.destination,
    operationType: r.operation_type,
    tenantId: r.tenant_id,
    payload: r.payload,
    attempts: r.attempts,
    outcomeUnknown: r.outcome_unknown,
    traceContext: r.trace_context,
    aggregate: r.aggregate,
  };
}

function toDestinationState(r: DestinationRow): DestinationState {
  return {
    destination: r.destination,
    circuit: r.circuit,
    failures: r.failures,
    retryAt: r.retry_at,
    probeUntil: r.probe_until,
    pausedUntil: r.paused_until,
    tokens: r.tokens,
    tokensAt: r.tokens_at,
    lastError: r.last_error,
    changedAt: r.changed_at,
    version: Number(r.version),
  };
}
