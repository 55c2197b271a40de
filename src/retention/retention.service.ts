import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { AuditService } from '../audit/audit.service';
import { InboxRetentionService } from '../inbox/inbox-retention.service';
import { RejectionLog } from '../ingestion/rejection-log';
import { OrdersService } from '../orders/orders.service';
import { ReconciliationService } from '../reconciliation/reconciliation.service';
import { OutboxService } from '../outbox/outbox.service';
import { RetentionAction, RetentionMetrics } from './retention.metrics';

/** Rows per statement (RETENTION_BATCH_SIZE): each batch is one short autocommit statement holding its row locks briefly. */
export const RETENTION_BATCH_SIZE = 1000;
/** Batches per kind and run (RETENTION_MAX_BATCHES); a larger backlog is continued by the next run, which comes soon. */
export const RETENTION_MAX_BATCHES = 100;

const DAY_MS = 24 * 60 * 60 * 1000;

export interface RetentionResult {
  payloadsPurged: number;
  identitiesDeleted: number;
  outboxPruned: number;
  /** Quarantined events, dead and unresolved outbox entries past RETENTION_ABANDONED_DAYS. */
  abandonedDeleted: number;
  ordersPruned: number;
  auditPruned: number;
  reconciliationRunsPruned: number;
  /** Rejected-request log rows past RETENTION_REJECTION_DAYS or their endpoint's REJECTION_LOG_MAX_ROWS. */
  rejectionsPruned: number;
  /** Statements run, all kinds together. */
  batches: number;
  /** A kind stopped at its batch cap (or at shutdown): the next run goes on. */
  capped: boolean;
}

interface Drained {
  count: number;
  batches: number;
  capped: boolean;
}

/**
 * The retention job (maintenance role): the lifecycle of every table that grows.
 * - settled inbox payloads after RETENTION_PAYLOAD_DAYS, settled inbox identities
 *   and delivered outbox entries after RETENTION_IDENTITY_DAYS;
 * - quarantined events and dead or unresolved outbox entries, kept for an operator,
 *   after RETENTION_ABANDONED_DAYS;
 * - orders (with their transitions) unchanged for RETENTION_ORDER_DAYS, audit rows
 *   after RETENTION_AUDIT_DAYS, finished reconciliation runs after
 *   RETENTION_RECONCILIATION_RUN_DAYS (each 0: kept for ever);
 * - the rejected-request log after RETENTION_REJECTION_DAYS, and past each
 *   endpoint's newest REJECTION_LOG_MAX_ROWS.
 * Work still to do (pending, processing, delivering, requested, running) is never
 * touched. Safe to run on several instances at once: every batch skips rows another holds.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);
  /** From RETENTION_BATCH_SIZE and RETENTION_MAX_BATCHES; tests lower them to exercise batching with few rows. */
  batchSize: number;
  maxBatches: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly inbox: InboxRetentionService,
    private readonly outbox: OutboxService,
    private readonly orders: OrdersService,
    private readonly audit: AuditService,
    private readonly reconciliation: ReconciliationService,
    private readonly rejections: RejectionLog,
    private readonly clock: Clock,
    private readonly metrics: RetentionMetrics,
  ) {
    this.batchSize = config.retention.batchSize;
    this.maxBatches = config.retention.maxBatches;
  }

  /** One run; `stopped` is checked between batches so shutdown need not wait for a long backlog. */
  async runOnce(stopped: () => boolean = () => false): Promise<RetentionResult> {
    const started = Date.now();
    const days = this.config.retention;
    const now = this.clock.now().getTime();
    const before = (d: number) => new Date(now - d * DAY_MS);
    const drain = (action: RetentionAction, keepDays: number, batch: (before: Date, limit: number) => Promise<number>) =>
      keepDays === 0
        ? Promise.resolve({ count: 0, batches: 0, capped: false })
        : this.drain(action, stopped, (n) => batch(before(keepDays), n));
    try {
      // Identities first: a row about to be deleted needs no payload purge before.
      const identities = await drain('inbox_identity_deleted', days.identityDays, (b, n) => this.inbox.deleteIdentities(b, n));
      const payloads = await drain('inbox_payload_purged', days.payloadDays, (b, n) => this.inbox.purgePayloads(b, n));
      const outbox = await drain('outbox_delivered_pruned', days.identityDays, (b, n) => this.outbox.pruneDelivered(b, n));
      const quarantined = await drain('inbox_quarantined_deleted', days.abandonedDays, (b, n) => this.inbox.deleteAbandoned(b, n));
      const dead = await drain('outbox_abandoned_pruned', days.abandonedDays, (b, n) => this.outbox.pruneAbandoned(b, n));
      const orders = await drain('orders_pruned', days.orderDays, (b, n) => this.orders.prune(b, n));
      const audit = await drain('audit_pruned', days.auditDays, (b, n) => this.audit.prune(b, n));
      const runs = await drain('reconciliation_runs_pruned', days.reconciliationRunDays, (b, n) => this.reconciliation.pruneRuns(b, n));
      const rejectionsOld = await drain('rejections_pruned', days.rejectionDays, (b, n) => this.rejections.prune(b, n));
      const rejectionsOver = await this.drain('rejections_pruned', stopped, (n) => this.rejections.trimToCap(n));
      const all = [identities, payloads, outbox, quarantined, dead, orders, audit, runs, rejectionsOld, rejectionsOver];
      const result: RetentionResult = {
        payloadsPurged: payloads.count,
        identitiesDeleted: identities.count,
        outboxPruned: outbox.count,
        abandonedDeleted: quarantined.count + dead.count,
        ordersPruned: orders.count,
        auditPruned: audit.count,
        reconciliationRunsPruned: runs.count,
        rejectionsPruned: rejectionsOld.count + rejectionsOver.count,
        batches: all.reduce((sum, d) => sum + d.batches, 0),
        capped: all.some((d) => d.capped),
      };
      this.metrics.run('ok');
      const summary = { ...result, ms: Date.now() - started };
      if (all.some((d) => d.count > 0)) this.logger.log(summary, 'retention run');
      else this.logger.debug(summary, 'retention run: nothing due');
      return result;
    } catch (error) {
      this.metrics.run('failed');
      throw error;
    }
  }

  private async drain(action: RetentionAction, stopped: () => boolean, batch: (limit: number) => Promise<number>): Promise<Drained> {
    let count = 0;
    for (let batches = 0; batches < this.maxBatches;) {
      if (stopped()) return { count, batches, capped: true };
      const n = await batch(this.batchSize);
      batches++;
      count += n;
      this.metrics.removed(action, n);
      // Fewer than asked: nothing more is due, or the rest is locked by someone else (next run).
      if (n < this.batchSize) return { count, batches, capped: false };
    }
    return { count, batches: this.maxBatches, capped: true };
  }
}
