import { createCipheriv, createDecipheriv, createSecretKey, KeyObject, randomFillSync } from 'node:crypto';
import { DataKey } from './key-source';

/** Format of a sealed value: version byte, 12-byte nonce, ciphertext, 16-byte GCM tag. */
const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEAD = Buffer.from([VERSION]);

/**
 * Random nonces drawn from the CSPRNG a pool at a time: one randomBytes(12) per
 * value cost 5 us on a loaded 2-core machine, a third of a seal. Each nonce is
 * copied into its sealed value before the pool is refilled.
 */
const noncePool = Buffer.alloc(NONCE_BYTES * 1024);
let nonceOffset = noncePool.length;

function nextNonce(): Buffer {
  if (nonceOffset === noncePool.length) {
    randomFillSync(noncePool);
    nonceOffset = 0;
  }
  return noncePool.subarray(nonceOffset, (nonceOffset += NONCE_BYTES));
}

export interface Sealed {
  keyId: string;
  sealed: Buffer;
}

/** The key id stored with a row is not in the ring: another instance may hold it (retry), or it was removed. */
export class UnknownKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`payload key "${keyId}" is not in this instance's key ring`);
    this.name = 'UnknownKeyError';
  }
}

/** The ciphertext does not authenticate for this context: altered, truncated, or moved from another row. */
export class SealBrokenError extends Error {
  constructor() {
    super('the ciphertext does not authenticate for this row (altered, or moved from another row)');
    this.name = 'SealBrokenError';
  }
}

/**
 * The payload key ring: AES-256-GCM (Node's crypto) with a random 96-bit nonce
 * per value. The caller's context (the row's identity) and the key id are the
 * associated data, so a ciphertext opens only for the row and key it was sealed
 * for. Empty ring: encryption off, and nothing may be sealed.
 */
export class KeyRing {
  private readonly keys = new Map<string, KeyObject>();
  readonly currentId: string | undefined;

  constructor(keys: readonly DataKey[]) {
    for (const k of keys) {
      if (k.key.length !== 32) throw new Error(`payload key "${k.id}" is not 32 bytes`);
      if (this.keys.has(k.id)) throw new Error(`payload key "${k.id}" is in the ring twice`);
      this.keys.set(k.id, createSecretKey(k.key));
    }
    this.currentId = keys[0]?.id;
  }

  get enabled(): boolean {
    return this.currentId !== undefined;
  }

  get ids(): string[] {
    return [...this.keys.keys()];
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /** Seals `plaintext` for `context` (the fields naming what it belongs to) with the current key. */
  seal(plaintext: Buffer | string, context: readonly string[]): Sealed {
    const keyId = this.currentId;
    if (keyId === undefined) throw new Error('no payload key ring: nothing can be sealed');
    const nonce = nextNonce();
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(keyId)!, nonce);
    cipher.setAAD(associatedData(context, keyId));
    const body = typeof plaintext === 'string' ? cipher.update(plaintext, 'utf8') : cipher.update(plaintext);
    const last = cipher.final();
    return { keyId, sealed: Buffer.concat([HEAD, nonce, body, last, cipher.getAuthTag()]) };
  }

  /** Opens a value sealed for `context` under `keyId`; throws UnknownKeyError or SealBrokenError. */
  open(keyId: string, sealed: Buffer, context: readonly string[]): Buffer {
    const key = this.keys.get(keyId);
    if (!key) throw new UnknownKeyError(keyId);
    if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new SealBrokenError();
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 1 + NONCE_BYTES));
    decipher.setAAD(associatedData(context, keyId));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    try {
      const plain = decipher.update(sealed.subarray(1 + NONCE_BYTES, sealed.length - TAG_BYTES));
      decipher.final(); // checks the tag; GCM has no trailing block
      return plain;
    } catch {
      throw new SealBrokenError();
    }
  }
}

/** The context's fields and the key id as a JSON array: no two tuples encode alike. */
function associatedData(context: readonly string[], keyId: string): Buffer {
  return Buffer.from(JSON.stringify([...context, keyId]), 'utf8');
}
