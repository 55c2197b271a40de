import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { InboxService } from '../inbox/inbox.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { ApiAdmin } from './api-docs';

@ApiTags('admin: payload keys')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/payload-keys')
export class AdminPayloadKeysController {
  constructor(private readonly inbox: InboxService) {}

  /** Counts over the partial index webhook_inbox_payload_key: one pass over the stored payloads' index entries. */
  @Get()
  @ApiOperation({ summary: "Stored payloads per key id (null: clear), this instance's key ring, and what re-encryption has left" })
  async keys() {
    const ring = this.inbox.payloadKeyRing();
    const rows = await this.inbox.payloadRowsByKey();
    const remaining = ring.current === undefined ? 0 : rows.filter((r) => r.keyId !== ring.current).reduce((n, r) => n + r.rows, 0);
    return {
      encrypted: ring.current !== undefined,
      current: ring.current ?? null,
      ring: ring.ids,
      keys: rows.map((r) => ({ keyId: r.keyId, rows: r.rows, current: r.keyId !== null && r.keyId === ring.current, inRing: r.keyId === null || ring.ids.includes(r.keyId) })),
      reencryption: { remaining, done: remaining === 0 },
    };
  }
}
