import { PayloadKeyConfig } from '../config/app-config';

/** One data key of the ring: 32 bytes for AES-256-GCM, named by the id stored with every row it seals. */
export interface DataKey {
  id: string;
  key: Buffer;
}

/**
 * Where the payload key ring comes from, read once at start; the first key is
 * the current one. The configured source reads PAYLOAD_KEYS / PAYLOAD_KEYS_FILE;
 * an external KMS would be another implementation that unwraps its data keys here
 * (bind it to PAYLOAD_KEY_SOURCE in CryptoModule).
 */
export interface PayloadKeySource {
  load(): Promise<DataKey[]>;
}

export const PAYLOAD_KEY_SOURCE = Symbol('PAYLOAD_KEY_SOURCE');

/** The keys validated by the config module (PAYLOAD_KEYS or PAYLOAD_KEYS_FILE), or none. */
export class ConfiguredKeySource implements PayloadKeySource {
  constructor(private readonly keys: readonly PayloadKeyConfig[] | undefined) {}

  load(): Promise<DataKey[]> {
    return Promise.resolve((this.keys ?? []).map((k) => ({ id: k.id, key: k.key })));
  }
}
