import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ACCEPT, CLAIM, FINISH, RECORD_FAILURE } from './inbox.queries';
import { AcceptRequest, AcceptResult, InboxEvent, InboxStatus } from './inbox.types';

interface EventRow {
  id: string;
  source_scope: string;
  event_id: string;
  tenant_id: string;
  provider: string;
  endpoint_id: string;
  event_type: string;
  payload: unknown;
  attempts: number;
  received_at: Date;
}

/** The only owner of `webhook_inbox` SQL. */
@Injectable()
export class InboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** One autocommit statement: when it returns, the row is durably committed. */
  async accept(r: AcceptRequest): Promise<AcceptResult> {
    const rows: { id: string; inserted: boolean; status: InboxStatus; same_digest: boolean }[] =
      await this.dataSource.query(ACCEPT, [
        r.sourceScope,
        r.eventId,
        r.tenantId,
        r.provider,
        r.endpointId,
        r.eventType,
        r.payloadJson,
        r.payloadSha256,
        r.verifiedWith,
        r.status,
        r.statusReason ?? null,
      ]);
    const row = rows[0];
    return {
      outcome: row.inserted ? 'accepted' : 'duplicate',
      id: String(row.id),
      status: row.status,
      digestConflict: !row.same_digest,
    };
  }

  /** One short autocommit statement: claims due and lease-expired rows for `workerId`. */
  async claim(workerId: string, now: Date, limit: number, leaseMs: number): Promise<InboxEvent[]> {
    const [rows]: [EventRow[], number] = await this.dataSource.query(CLAIM, [now, workerId, limit, leaseMs]);
    return rows.map((r) => ({
      id: String(r.id),
      sourceScope: r.source_scope,
      eventId: r.event_id,
      tenantId: r.tenant_id,
      provider: r.provider,
      endpointId: r.endpoint_id,
      eventType: r.event_type,
      payload: r.payload,
      attempts: r.attempts,
      receivedAt: r.received_at,
    }));
  }

  /** Fenced final status in the caller's transaction; false when the lease was lost. */
  async finish(
    tx: EntityManager,
    id: string,
    workerId: string,
    status: 'done' | 'ignored' | 'quarantined',
    reason: string | null,
    now: Date,
  ): Promise<boolean> {
    const [, count]: [unknown, number] = await tx.query(FINISH, [id, workerId, status, reason, now]);
    return count === 1;
  }

  /** Fenced retry bookkeeping; undefined when the lease was lost. */
  async recordFailure(
    id: string,
    workerId: string,
    error: string,
    nextAttemptAt: Date,
    maxAttempts: number,
    now: Date,
  ): Promise<{ status: InboxStatus; attempts: number } | undefined> {
    const [rows]: [{ status: InboxStatus; attempts: number }[], number] = await this.dataSource.query(RECORD_FAILURE, [
      id,
      workerId,
      error,
      nextAttemptAt,
      maxAttempts,
      now,
    ]);
    return rows[0];
  }
}
