import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { OperationOutcome, OutboxEntry } from './destinations/destination';
import { CLAIM_OUTBOX, ERASE_RECIPIENTS, PRUNE_DELIVERED, RECORD_OUTCOMES } from './outbox.queries';
import { queryPrepared } from '../database/prepared-statement';
import { OutboxStatus } from './outbox.types';

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
}

/** Owner of the relay's `outbox` SQL: claim and fenced outcome recording. */
@Injectable()
export class OutboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** One autocommit statement: the claim is committed (and every row lock released) when it returns. */
  async claim(relayId: string, now: Date, leaseMs: number, limit: number): Promise<OutboxEntry[]> {
    const rows = await queryPrepared<ClaimedRow>(this.dataSource, 'outbox_claim', CLAIM_OUTBOX, [now, relayId, leaseMs, limit]);
    return rows.map((r) => ({
      id: String(r.id),
      operationKey: r.operation_key,
      destination: r.destination,
      operationType: r.operation_type,
      tenantId: r.tenant_id,
      payload: r.payload,
      attempts: r.attempts,
      outcomeUnknown: r.outcome_unknown,
      traceContext: r.trace_context,
    }));
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

  /** Erasure, in the caller's transaction: see ERASE_RECIPIENTS. */
  async eraseRecipients(tx: EntityManager, operationKeys: string[]): Promise<{ entries: number; blanked: number; sourceEventIds: string[] }> {
    const rows: { id: string; source_event_id: string | null; blanked: boolean }[] = await tx.query(ERASE_RECIPIENTS, [operationKeys]);
    return {
      entries: rows.length,
      blanked: rows.filter((r) => r.blanked).length,
      sourceEventIds: [...new Set(rows.flatMap((r) => (r.source_event_id === null ? [] : [String(r.source_event_id)])))],
    };
  }
}
