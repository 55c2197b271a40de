import { Body, Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CustomerErasureService } from '../orders/customer-erasure.service';
import { AdminPrincipal } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { BODY_REASONS, erasureBody, parseOr400 } from './admin.schemas';
import { ApiAdmin, ApiZodBody, ApiZodResponse } from './api-docs';
import { erasureResult } from './admin.responses';
import { CurrentAdmin, Roles } from './roles.decorator';

@ApiTags('admin: erasure')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/erasure')
export class AdminErasureController {
  constructor(private readonly erasure: CustomerErasureService) {}

  @Post()
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({
    summary:
      "Erase one customer's personal data, by e-mail address or by order: orders' address blanked, e-mail operations' recipient blanked (unsent ones dead), settled events' payloads mentioning them purged, open events' payloads redacted (the address replaced, the work kept); identities and digests kept. Payloads this instance cannot open are listed in `unreadable` (run again once they open). `dryRun: true` changes nothing and answers what would change",
  })
  @ApiZodBody(erasureBody)
  @ApiZodResponse(200, erasureResult)
  erase(@CurrentAdmin() who: AdminPrincipal, @Body() body: unknown) {
    const { reason, email, tenantId, orderId, dryRun } = parseOr400(erasureBody, body, 'invalid_body', BODY_REASONS);
    return this.erasure.erase(
      email !== undefined ? { email } : { tenantId: tenantId!, orderId: orderId! },
      { actor: who, reason },
      dryRun ?? false,
    );
  }
}
