import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { afterCommit } from '../database/after-commit';
import { PgNotifications } from '../database/pg-notifications';
import { queryPreparedIn } from '../database/prepared-statement';
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
} & { [D in keyof OutboxPayloads]: { destination: D; payload: OutboxPayloads[D] } }[keyof OutboxPayloads];

/**
 * Writes outbox entries inside the caller's transaction, so they commit (or
 * not) with the business change. Idempotent per operation key.
 */
@Injectable()
export class OutboxWriter {
  constructor(private readonly notifications: PgNotifications) {}

  /** Resolves with the operation keys actually inserted (keys already present are skipped). */
  async write(tx: EntityManager, entries: OutboxWrite[]): Promise<string[]> {
    if (entries.length === 0) return [];
    const { rows } = await queryPreparedIn<{ operation_key: string }>(tx, 'outbox_insert', INSERT_OUTBOX, [
      entries.map((e) => e.operationKey),
      entries.map((e) => e.destination),
      entries.map((e) => e.operationType),
      entries.map((e) => e.tenantId),
      JSON.stringify(entries.map((e) => e.payload)),
      entries.map((e) => e.sourceEventId),
    ]);
    // Wake the relays once the entries are visible (throttled; the relay also polls).
    if (rows.length > 0) afterCommit(tx, () => this.notifications.notify(OUTBOX_CHANNEL));
    return rows.map((r) => r.operation_key);
  }
}
