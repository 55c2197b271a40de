import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { InboxService } from '../inbox/inbox.service';
import { OutboxService } from '../outbox/outbox.service';
import { RetentionAction, RetentionMetrics } from './retention.metrics';

/** Rows per statement: each batch is one short autocommit statement holding its row locks briefly. */
export const RETENTION_BATCH_SIZE = 1000;
/** Batches per kind and run; a larger backlog is continued by the next run. */
export const RETENTION_MAX_BATCHES = 100;

const DAY_MS = 24 * 60 * 60 * 1000;

export interface RetentionResult {
  payloadsPurged: number;
  identitiesDeleted: number;
  outboxPruned: number;
  /** Statements run, all kinds together. */
  batches: number;
  /** A kind stopped at RETENTION_MAX_BATCHES (or at shutdown): the next run goes on. */
  capped: boolean;
}

interface Drained {
  count: number;
  batches: number;
  capped: boolean;
}

/**
 * The retention job (maintenance role): drops settled inbox payloads after
 * RETENTION_PAYLOAD_DAYS, settled inbox identities after RETENTION_IDENTITY_DAYS,
 * and delivered outbox entries after RETENTION_IDENTITY_DAYS. Open work (pending,
 * processing, quarantined, delivering, unresolved, dead) is never touched. Safe to
 * run on several instances at once: every batch skips rows another holds.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);
  /** Overridable by tests, to exercise batching with few rows. */
  batchSize = RETENTION_BATCH_SIZE;
  maxBatches = RETENTION_MAX_BATCHES;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly inbox: InboxService,
    private readonly outbox: OutboxService,
    private readonly clock: Clock,
    private readonly metrics: RetentionMetrics,
  ) {}

  /** One run; `stopped` is checked between batches so shutdown need not wait for a long backlog. */
  async runOnce(stopped: () => boolean = () => false): Promise<RetentionResult> {
    const started = Date.now();
    const now = this.clock.now().getTime();
    const payloadsBefore = new Date(now - this.config.retention.payloadDays * DAY_MS);
    const identitiesBefore = new Date(now - this.config.retention.identityDays * DAY_MS);
    try {
      // Identities first: a row about to be deleted needs no payload purge before.
      const identities = await this.drain('inbox_identity_deleted', stopped, (n) => this.inbox.deleteIdentities(identitiesBefore, n));
      const payloads = await this.drain('inbox_payload_purged', stopped, (n) => this.inbox.purgePayloads(payloadsBefore, n));
      const outbox = await this.drain('outbox_delivered_pruned', stopped, (n) => this.outbox.pruneDelivered(identitiesBefore, n));
      const result: RetentionResult = {
        payloadsPurged: payloads.count,
        identitiesDeleted: identities.count,
        outboxPruned: outbox.count,
        batches: identities.batches + payloads.batches + outbox.batches,
        capped: identities.capped || payloads.capped || outbox.capped,
      };
      this.metrics.run('ok');
      const summary = { ...result, ms: Date.now() - started };
      if (result.payloadsPurged + result.identitiesDeleted + result.outboxPruned > 0) this.logger.log(summary, 'retention run');
      else this.logger.debug(summary, 'retention run: nothing due');
      return result;
    } catch (error) {
      this.metrics.run('failed');
      throw error;
    }
  }

  private async drain(action: RetentionAction, stopped: () => boolean, batch: (limit: number) => Promise<number>): Promise<Drained> {
    let count = 0;
    for (let batches = 0; batches < this.maxBatches; ) {
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
