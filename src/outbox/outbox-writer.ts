import { Inject, Injectable } from '@nestjs/common';
import { Span } from '@opentelemetry/api';
import { UnitOfWork } from '../database/unit-of-work';
import { PgNotifications } from '../database/pg-notifications';
import { Tracing } from '../tracing/tracing';
import { OutboxEntry } from './destinations/destination';
import { HandOver, RELAY_INTAKE, RelayIntake } from './relay-intake.port';
import { INSERT_OUTBOX } from './outbox.queries';
import { OutboxRepository } from './outbox.repository';
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
 *
 * When this instance's relay can send them at once, the entries of a transaction
 * are committed already claimed for it and handed over after the commit (one
 * lease per transaction; OutboxRelay.handOver): no NOTIFY and no claim. Read back
 * by their lease just before the COMMIT, in its round trip, so that entries a
 * rolled-back savepoint undid are never sent.
 */
@Injectable()
export class OutboxWriter {
  constructor(
    private readonly notifications: PgNotifications,
    private readonly tracing: Tracing,
    @Inject(RELAY_INTAKE) private readonly relay: RelayIntake,
    private readonly repository: OutboxRepository,
  ) {}

  /**
   * Sends the insert in the transaction `tx` at once,
   * pipelined with whatever the transaction sends next: a caller that needs no answer need not
   * wait, and a failure fails the transaction either way. Resolves with the operation keys
   * actually inserted (keys already present are skipped).
   */
  write(tx: UnitOfWork, entries: OutboxWrite[]): Promise<string[]> {
    if (entries.length === 0) return Promise.resolve([]);
    const traceContexts = this.tracing.enabled ? entries.map((e) => this.tracing.sourceTraceparent(tx, e.sourceEventId) ?? null) : null;
    const spans = traceContexts && this.writeSpans(traceContexts);
    const values: unknown[] = [
      entries.map((e) => e.operationKey),
      entries.map((e) => e.destination),
      entries.map((e) => e.operationType),
      entries.map((e) => e.tenantId),
      JSON.stringify(entries.map((e) => e.payload)),
      entries.map((e) => e.sourceEventId),
      entries.map((e) => e.aggregate ?? null),
      traceContexts,
    ];
    const written = this.writesOf(tx);
    for (const e of entries) written.byKey.set(e.operationKey, e);
    const handOver = written.handOver;
    const offers = handOver && offered(entries, handOver);
    if (offers?.includes(true)) written.offered = true;
    values.push(offers, handOver?.lease ?? null, handOver?.until ?? null);
    const inserted = tx
      .send<{ operation_key: string }>({ name: 'outbox_insert', text: INSERT_OUTBOX, values })
      .then((rows) => rows.map((r) => r.operation_key))
      .finally(() => spans?.forEach((span) => span.end()));
    // A caller that does not wait learns of a failure from the transaction.
    inserted.catch(() => undefined);
    written.inserted.push(inserted);
    return inserted;
  }

  /** What `tx` has written, and its hand-over (null: none, all pending): kept on the transaction from its first write. */
  private writesOf(tx: UnitOfWork): TransactionWrites {
    return tx.local(this, () => this.firstWrite(tx));
  }

  /** At the transaction's first write: its hand-over, and the callbacks that hand the entries over or wake a relay for those left pending. */
  private firstWrite(tx: UnitOfWork): TransactionWrites {
    const handOver = this.relay.handOver() ?? null;
    const written: TransactionWrites = { handOver, offered: false, inserted: [], byKey: new Map() };
    const { inserted, byKey } = written;
    let handed: Promise<OutboxEntry[]> | undefined;
    if (handOver) {
      tx.beforeCommit(() => {
        // No statement when nothing was offered (a busy destination's hand-over takes only some tenants').
        handed = written.offered ? this.repository.handedIn(tx, handOver.lease) : Promise.resolve([]);
        // If it fails, so does the transaction, and nothing is handed over.
        handed.catch(() => undefined);
      });
    }
    // Wake a relay for what is pending once it is visible: this instance's own, else the others (throttled; every relay also polls).
    // Each answer is in after the COMMIT: the statements were answered before it. A write whose
    // savepoint failed wrote nothing (its keys are not among the answers).
    const pending = (writes: PromiseSettledResult<string[]>[], handedKeys: Set<string>) => {
      const left = writes.flatMap((w) => (w.status === 'fulfilled' ? w.value : [])).filter((key) => !handedKeys.has(key));
      if (left.length === 0) return;
      this.relay.pendingWritten(
        left.map((key) => {
          const { tenantId, destination } = byKey.get(key)!;
          return { tenantId, destination };
        }),
      );
      this.notifications.notifyNearest(OUTBOX_CHANNEL);
    };
    tx.afterCommit(() => {
      if (!handed) return void Promise.allSettled(inserted).then((writes) => pending(writes, new Set()));
      void Promise.all([handed, Promise.allSettled(inserted)]).then(([entries, writes]) => {
        this.relay.handedOver(handOver!, entries);
        pending(writes, new Set(entries.map((e) => e.operationKey)));
      });
    });
    return written;
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

interface TransactionWrites {
  handOver: HandOver | null;
  /** Some entry was offered to the hand-over (committed claimed, if the table allows). */
  offered: boolean;
  inserted: Promise<string[]>[];
  /** What each write asked for, by operation key: the tenant and destination of an entry left pending. */
  byKey: Map<string, OutboxWrite>;
}

/**
 * Which entries the relay may take at once: its destination (and tenant) admitted, and no entry of the same
 * aggregate and destination before it in this write (that one goes first; INSERT_OUTBOX checks the table).
 */
function offered(entries: OutboxWrite[], handOver: HandOver): boolean[] {
  const first = new Set<string>();
  return entries.map((e) => {
    if (!handOver.destinations.includes(e.destination) || (handOver.takes && !handOver.takes(e.destination, e.tenantId))) return false;
    if (e.aggregate === undefined) return true;
    const key = `${e.tenantId}\0${e.aggregate}\0${e.destination}`;
    if (first.has(key)) return false;
    first.add(key);
    return true;
  });
}
