import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { ConfigError } from '../config/config.error';
import { InboxPayloads } from './inbox-payloads';
import { InboxRepository } from './inbox.repository';

/**
 * A key may leave the ring only when no stored payload uses it: refuse to start
 * with a ring that cannot open a live row, rather than quarantine those events
 * one by one later. One index probe per key id in use (a loose scan).
 */
@Injectable()
export class PayloadKeyCheck implements OnApplicationBootstrap {
  constructor(
    private readonly repository: InboxRepository,
    private readonly payloads: InboxPayloads,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const inUse = await this.repository.payloadKeysInUse();
    const missing = inUse.filter((id): id is string => id !== null && !this.payloads.keyIds.includes(id));
    if (missing.length === 0) return;
    const variable = this.payloads.encrypted ? 'PAYLOAD_KEYS' : 'PAYLOAD_KEYS (unset)';
    throw new ConfigError(
      `${variable}: stored payloads are sealed with key${missing.length > 1 ? 's' : ''} ${missing.map((id) => `"${id}"`).join(', ')}, ` +
        `which the key ring does not hold: keep every key until GET /admin/payload-keys shows no row under it`,
    );
  }
}
