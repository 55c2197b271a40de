import { Injectable } from '@nestjs/common';
import { InboxPayloads } from './inbox-payloads';
import { InboxRepository } from './inbox.repository';

export interface PayloadKeyReport {
  encrypted: boolean;
  current: string | null;
  ring: string[];
  keys: { keyId: string | null; rows: number; current: boolean; inRing: boolean }[];
  /** Stored payloads not under the current key (0 without a ring). */
  reencryption: { remaining: number; done: boolean };
}

/** The payloads' keys: this instance's ring, the keys stored payloads use, and re-encryption after a rotation (admin, the maintenance job). */
@Injectable()
export class PayloadKeysService {
  constructor(
    private readonly repository: InboxRepository,
    private readonly payloads: InboxPayloads,
  ) {}

  /** This instance's key ring: the current key id (undefined: encryption off) and every id it can open. */
  ring(): { current?: string; ids: string[] } {
    return { current: this.payloads.currentKeyId, ids: this.payloads.keyIds };
  }

  /** Key ids stored payloads are sealed with; `null` in the list when clear payloads remain. */
  keysInUse(): Promise<(string | null)[]> {
    return this.repository.payloadKeysInUse();
  }

  /**
   * For operators: stored payloads per key id (null: clear), this instance's ring, and
   * what re-encryption has left. One pass over webhook_inbox_payload_key.
   */
  async report(): Promise<PayloadKeyReport> {
    const ring = this.ring();
    const rows = await this.repository.payloadRowsByKey();
    const remaining = ring.current === undefined ? 0 : rows.filter((r) => r.keyId !== ring.current).reduce((n, r) => n + r.rows, 0);
    return {
      encrypted: ring.current !== undefined,
      current: ring.current ?? null,
      ring: ring.ids,
      keys: rows.map((r) => ({
        keyId: r.keyId,
        rows: r.rows,
        current: r.keyId !== null && r.keyId === ring.current,
        inRing: r.keyId === null || ring.ids.includes(r.keyId),
      })),
      reencryption: { remaining, done: remaining === 0 },
    };
  }

  rowsOf(keyId: string | null): Promise<number> {
    return this.repository.payloadRowsOf(keyId);
  }

  /** One re-encryption batch of rows under `fromKey` (null: clear) after `afterId` (see InboxRepository). */
  reencryptBatch(
    fromKey: string | null,
    afterId: string,
    limit: number,
  ): Promise<{ lastId: string | null; resealed: number; unreadable: number }> {
    return this.repository.reencryptBatch(fromKey, afterId, limit);
  }
}
