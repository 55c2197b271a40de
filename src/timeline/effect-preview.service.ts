import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isTimeoutOfWait } from '../common/database-errors';
import { NotFoundError, ServiceUnavailableError } from '../common/errors';
import { TenantScope } from '../common/tenant-scope';
import { TableWrites, transactionWrites, writesSince } from '../database/transaction-writes';
import { runRolledBack } from '../database/unit-of-work';
import { InboxAdminService, PreviewStart } from '../inbox/inbox-admin.service';
import { InboxStatus, PreviewOutcome } from '../inbox/inbox.types';
import { OrdersService } from '../orders/orders.service';
import { OutboxAdminService } from '../outbox/outbox-admin.service';

/** The preview waits this long for a lock (an order a worker holds) before answering 503 `preview_busy`. */
export const PREVIEW_LOCK_TIMEOUT_MS = 1000;
/** And this long for any one statement. */
export const PREVIEW_STATEMENT_TIMEOUT_MS = 5000;

/** What replaying one event would do now: the worker's outcome, the order transitions and the outbox operations it would write. */
export interface EffectPreview {
  id: string;
  eventType: string;
  status: InboxStatus;
  replayRefusal: PreviewStart['replayRefusal'];
  confirmRead: PreviewStart['confirmRead'];
  outcome: PreviewOutcome;
  transitions: { tenantId: string; orderId: string; from: string; to: string }[];
  operations: { operationKey: string; destination: string; operationType: string; aggregate: string | null }[];
  /** Every row the handler's transaction wrote, by table (PostgreSQL's own counters): e.g. a recorded payment failure is an `orders` update. */
  writes: Record<string, TableWrites>;
}

/**
 * The effect preview (a dry run of one event's handler): the event's work runs as the worker
 * would run it after a replay, in a transaction that is always rolled back, and what it wrote is
 * read back before the rollback. It never calls a provider (the confirm read: see
 * InboxAdminService.previewStart) and holds its locks only for its few statements, each bounded
 * by PREVIEW_LOCK_TIMEOUT_MS and PREVIEW_STATEMENT_TIMEOUT_MS.
 */
@Injectable()
export class EffectPreviewService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly inbox: InboxAdminService,
    private readonly orders: OrdersService,
    private readonly outbox: OutboxAdminService,
  ) {}

  /** NotFoundError when there is no such event in `tenants`; 503 `preview_busy` when a lock or statement timed out. */
  async preview(id: string, tenants: TenantScope): Promise<EffectPreview> {
    try {
      return await runRolledBack(
        this.dataSource,
        { lockTimeoutMs: PREVIEW_LOCK_TIMEOUT_MS, statementTimeoutMs: PREVIEW_STATEMENT_TIMEOUT_MS },
        async (tx) => {
          const start = await this.inbox.previewStart(tx, id, tenants);
          if (!start) throw new NotFoundError('inbox_event_not_found', 'no inbox event with this id');
          const before = await transactionWrites(tx);
          const outcome = await this.inbox.applyForPreview(tx, start.event);
          const base = { id, eventType: start.event.eventType, status: start.status, replayRefusal: start.replayRefusal };
          const preview = { ...base, confirmRead: start.confirmRead, outcome };
          // A failed attempt's writes were undone with its savepoint: it writes nothing.
          if (outcome.status === 'retry') return { ...preview, transitions: [], operations: [], writes: {} };
          const [transitions, operations, after] = [
            await this.orders.transitionsWrittenIn(tx, id),
            await this.outbox.entriesWrittenIn(tx, id),
            await transactionWrites(tx),
          ];
          return {
            ...preview,
            transitions: transitions.map(({ tenantId, orderId, from, to }) => ({ tenantId, orderId, from, to })),
            operations: operations.map(({ operationKey, destination, operationType, aggregate }) => ({
              operationKey,
              destination,
              operationType,
              aggregate,
            })),
            writes: writesSince(before, after),
          };
        },
      );
    } catch (error) {
      if (isTimeoutOfWait(error)) throw new ServiceUnavailableError('preview_busy', 1);
      throw error;
    }
  }

  /** Each of `ids` previewed in turn, each in its own rolled-back transaction; an event gone meanwhile is left out. */
  async previewMany(ids: string[], tenants: TenantScope): Promise<EffectPreview[]> {
    const previews: EffectPreview[] = [];
    for (const id of ids) {
      try {
        previews.push(await this.preview(id, tenants));
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
    }
    return previews;
  }
}
