import { Injectable, Logger } from '@nestjs/common';
import { PayloadKeysService } from '../inbox/payload-keys.service';
import { ReencryptionMetrics } from './reencryption.metrics';

/** Rows per transaction: each batch locks its rows for a few milliseconds only. */
export const REENCRYPTION_BATCH_SIZE = 200;
/** Batches per run; a larger backlog is continued by the next run. */
export const REENCRYPTION_MAX_BATCHES = 500;

export interface ReencryptionResult {
  resealed: number;
  /** Rows that did not open (altered or moved): left as they are for the worker to quarantine. */
  unreadable: number;
  /** Stopped at REENCRYPTION_MAX_BATCHES or at shutdown: the next run goes on. */
  capped: boolean;
}

/**
 * Moves stored payloads to the current key (maintenance role): after a rotation,
 * the rows of every older key, and clear rows written before encryption was on.
 * Each batch is one short transaction (SKIP LOCKED), so a crash loses at most the
 * batch in flight, which stays readable under its old key; the next run starts over
 * and finds only the rows still to move. Several instances may run it at once.
 */
@Injectable()
export class PayloadReencryptionService {
  private readonly logger = new Logger(PayloadReencryptionService.name);
  /** Overridable by tests, to exercise batching with few rows. */
  batchSize = REENCRYPTION_BATCH_SIZE;
  maxBatches = REENCRYPTION_MAX_BATCHES;

  constructor(
    private readonly keys: PayloadKeysService,
    private readonly metrics: ReencryptionMetrics,
  ) {}

  async runOnce(stopped: () => boolean = () => false): Promise<ReencryptionResult> {
    const result: ReencryptionResult = { resealed: 0, unreadable: 0, capped: false };
    const { current } = this.keys.ring();
    if (current === undefined) return result;
    const started = Date.now();
    const old = (await this.keys.keysInUse()).filter((keyId) => keyId !== current);
    let batches = 0;
    for (const keyId of old) {
      for (let after = '0'; ;) {
        if (stopped() || batches >= this.maxBatches) {
          result.capped = true;
          break;
        }
        const batch = await this.keys.reencryptBatch(keyId, after, this.batchSize);
        batches++;
        result.resealed += batch.resealed;
        result.unreadable += batch.unreadable;
        this.metrics.moved('resealed', batch.resealed);
        this.metrics.moved('unreadable', batch.unreadable);
        if (batch.lastId === null) break;
        after = batch.lastId;
      }
    }
    this.metrics.left(await Promise.all(old.map(async (keyId) => ({ keyId, rows: await this.keys.rowsOf(keyId) }))));
    if (result.resealed + result.unreadable > 0) {
      const summary = { ...result, current, from: old.map((k) => k ?? 'clear'), batches, ms: Date.now() - started };
      if (result.unreadable > 0) this.logger.warn(summary, 'payload re-encryption run: some payloads do not open');
      else this.logger.log(summary, 'payload re-encryption run');
    }
    return result;
  }
}
