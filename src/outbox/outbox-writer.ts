import { Injectable } from '@nestjs/common';
import { Span } from '@opentelemetry/api';
import { EntityManager } from 'typeorm';
import { afterCommit, sendIn } from '../database/transaction';
import { PgNotifications } from '../database/pg-notifications';
import { Tracing } from '../tracing/tracing';
import { INSERT_OUTBOX } from './outbox.queries';
import { OUTBOX_CHANNEL } from './outbox.types';

/**
 * The payload of each destination, by name. Each destination adds its entry
 * beside itself by declaration merging (erp.destination.ts, docs/extending.md):
 * `declare module '../outbox-writer' { interface OutboxPayloads { crm: CrmPayload } }`.
 */
export interface OutboxPayloads {}

export type OutboxWrite = {
  /** The Idempotency-Key, e.g. `erp:order-paid:<tenant>:<order>`. */
  operationKey: string;
  operationType: string;
  tenantId: string;
  /** The inbox row whose processing produced this entry. */
  sourceEventId: string | null;
  /**
   * The aggregate within the tenant whose entries each destination receives in the order
   * written (`order:<id>`): the relay sends none while an earlier one is not delivered.
   * Write it while holding the aggregate's lock. Omitted: delivered on its own schedule.
   */
  aggregate?: string;
} & { [D in keyof OutboxPayloads]: { destination: D; payload: OutboxPayloads[D] } }[keyof OutboxPayloads];

/**
 * Writes outbox entries inside the caller's transaction, so they commit (or
 * not) with the business change. Idempotent per operation key. With tracing on,
 * each entry stores the trace context of the event that produced it, and the
 * write is a span in that event's trace.
 */
@Injectable()
export class OutboxWriter {
  constructor(
    private readonly notifications: PgNotifications,
    private readonly tracing: Tracing,
  ) {}

  /**
   * Sends the insert in the transaction of `tx` (a transactionWithAfterCommit one) at once,
   * pipelined with whatever the transaction sends next: a caller that needs no answer need not
   * wait, and a failure fails the transaction either way. Resolves with the operation keys
   * actually inserted (keys already present are skipped).
   */
  write(tx: EntityManager, entries: OutboxWrite[]): Promise<string[]> {
    if (entries.length === 0) return Promise.resolve([]);
    const traceContexts = this.tracing.enabled ? entries.map((e) => this.tracing.sourceTraceparent(tx, e.sourceEventId) ?? null) : null;
    const spans = traceContexts && this.writeSpans(traceContexts);
    const values = [
      entries.map((e) => e.operationKey),
      entries.map((e) => e.destination),
      entries.map((e) => e.operationType),
      entries.map((e) => e.tenantId),
      JSON.stringify(entries.map((e) => e.payload)),
      entries.map((e) => e.sourceEventId),
      entries.map((e) => e.aggregate ?? null),
      traceContexts,
    ];
    // Wake a relay once the entries are visible: this instance's own, else the others (throttled; every relay also polls).
    afterCommit(tx, () => this.notifications.notifyNearest(OUTBOX_CHANNEL));
    const inserted = sendIn<{ operation_key: string }>(tx, { name: 'outbox_insert', text: INSERT_OUTBOX, values })
      .then((rows) => rows.map((r) => r.operation_key))
      .finally(() => spans?.forEach((span) => span.end()));
    // A caller that does not wait learns of a failure from the transaction.
    inserted.catch(() => undefined);
    return inserted;
  }

  /** One `outbox.write` span in the trace of each event whose entries this statement writes. */
  private writeSpans(traceContexts: (string | null)[]): Span[] {
    const counts = new Map<string | null, number>();
    for (const t of traceContexts) counts.set(t, (counts.get(t) ?? 0) + 1);
    return [...counts].map(([traceparent, n]) =>
      this.tracing.startSpan('outbox.write', { attributes: { 'outbox.entries': n } }, this.tracing.continueFrom(traceparent)),
    );
  }
}
