import { Injectable } from '@nestjs/common';
import { jsonDepthExceeds, MAX_PAYLOAD_DEPTH, valueDepthExceeds } from '../common/json-depth';
import { KeyRing, SealBrokenError, UnknownKeyError } from '../crypto/key-ring';

/** The three payload columns of a payload row (webhook_inbox_payloads) or a legacy inbox row. */
export interface StoredPayload {
  /** Clear jsonb text (no key ring), else null. */
  payload: string | null;
  payload_sealed: Buffer | null;
  payload_key_id: string | null;
}

/**
 * Why a stored payload could not be read: the worker quarantines `payload_decryption_failed`
 * and `payload_too_deep` (nested past MAX_PAYLOAD_DEPTH: stored before receipt refused
 * such bodies, or by hand), retries `payload_key_unknown` and `payload_moving` (its day
 * was being forgotten as the claim read it, the payload carried to today: found next time).
 */
export type PayloadUnreadable = 'payload_decryption_failed' | 'payload_key_unknown' | 'payload_too_deep' | 'payload_moving';

export type OpenedPayload = { ok: true; payload: unknown } | { ok: false; reason: PayloadUnreadable; message: string };

const TOO_DEEP: OpenedPayload = {
  ok: false,
  reason: 'payload_too_deep',
  message: `payload nested deeper than ${MAX_PAYLOAD_DEPTH} levels`,
};

/** What the row a sealed payload belongs to is known by before its insert: its identity. */
function context(sourceScope: string, eventId: string): string[] {
  return ['webhook_inbox.payload', sourceScope, eventId];
}

/**
 * The at-rest form of inbox payloads. With a key ring, a payload is sealed with
 * the current key and the row's identity (source_scope, event_id) as associated
 * data, so it opens only in that row; without one it is stored as clear jsonb.
 * Plaintext exists only in memory and is never logged.
 */
@Injectable()
export class InboxPayloads {
  constructor(private readonly ring: KeyRing) {}

  get encrypted(): boolean {
    return this.ring.enabled;
  }

  get currentKeyId(): string | undefined {
    return this.ring.currentId;
  }

  get keyIds(): string[] {
    return this.ring.ids;
  }

  /** The stored form of `json` (the verified body, as text) for the row `sourceScope`/`eventId`. */
  store(sourceScope: string, eventId: string, json: string): StoredPayload {
    if (!this.ring.enabled) return { payload: json, payload_sealed: null, payload_key_id: null };
    const { keyId, sealed } = this.ring.seal(json, context(sourceScope, eventId));
    return { payload: null, payload_sealed: sealed, payload_key_id: keyId };
  }

  /** The parsed payload of a row (null when purged), or why it cannot be read; never one too deep for a walk. */
  open(row: SealedRow & { payload: unknown }): OpenedPayload {
    if (row.payload_sealed == null) return valueDepthExceeds(row.payload) ? TOO_DEEP : { ok: true, payload: row.payload ?? null };
    const plain = this.decrypt(row);
    if (!plain.ok) return plain;
    // The depth scan reads the decrypted bytes themselves: no second encoding of the text.
    return jsonDepthExceeds(plain.payload) ? TOO_DEEP : { ok: true, payload: JSON.parse(plain.payload.toString('utf8')) };
  }

  /** The JSON text of a sealed payload, or why it cannot be read. */
  openSealed(row: SealedRow): OpenedPayload {
    const plain = this.decrypt(row);
    return plain.ok ? { ok: true, payload: plain.payload.toString('utf8') } : plain;
  }

  private decrypt(row: SealedRow): { ok: true; payload: Buffer } | Extract<OpenedPayload, { ok: false }> {
    try {
      return { ok: true, payload: this.ring.open(row.payload_key_id ?? '', row.payload_sealed!, context(row.source_scope, row.event_id)) };
    } catch (error) {
      if (error instanceof UnknownKeyError) return { ok: false, reason: 'payload_key_unknown', message: error.message };
      if (error instanceof SealBrokenError) return { ok: false, reason: 'payload_decryption_failed', message: error.message };
      throw error;
    }
  }
}

interface SealedRow {
  source_scope: string;
  event_id: string;
  payload_sealed: Buffer | null;
  payload_key_id: string | null;
}
