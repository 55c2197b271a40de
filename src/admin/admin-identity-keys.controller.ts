import { Body, Controller, Get, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { IdentityKeys } from '../inbox/identity-keys';
import { AdminPrincipal } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { BODY_REASONS, parseOr400, reasonBody } from './admin.schemas';
import { ApiAdmin, ApiZodBody, ApiZodResponse } from './api-docs';
import { identityKeys, timeKeysSwitch } from './admin.responses';
import { CurrentAdmin, Roles } from './roles.decorator';

/** The inbox's identity keys (migration 1765650000000): for every tenant at once, so no tenant token reaches it. */
@ApiTags('admin: inbox')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/identity-keys')
export class AdminIdentityKeysController {
  constructor(private readonly keys: IdentityKeys) {}

  @Get()
  @ApiOperation({ summary: 'How the inbox keys event identities: by the stated time from `keyedFrom` on, or by id alone' })
  @ApiZodResponse(200, identityKeys)
  async mode() {
    const { keyedFromMs, oldConstraint } = await this.keys.current();
    const keyedFrom = keyedFromMs === undefined ? null : keyedFromMs === -Infinity ? '-infinity' : new Date(keyedFromMs).toISOString();
    return { keyedFrom, oldConstraint };
  }

  @Post('time')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({
    summary:
      'The contract step of an upgrade: key identities by stated time from a day ahead, and drop the id-only constraint. Only once no instance of an older version runs.',
  })
  @ApiZodBody(reasonBody)
  @ApiZodResponse(200, timeKeysSwitch)
  switchToTime(@CurrentAdmin() who: AdminPrincipal, @Body() body: unknown) {
    const { reason } = parseOr400(reasonBody, body, 'invalid_body', BODY_REASONS);
    return this.keys.switchToTime(who, reason);
  }
}
