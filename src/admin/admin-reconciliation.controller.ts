import { Body, Controller, Get, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ReconciliationService } from '../reconciliation/reconciliation.service';
import { AdminPrincipal } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { BODY_REASONS, parseOr400, reconciliationRunBody } from './admin.schemas';
import { ApiAdmin, ApiZodBody, ApiZodResponse } from './api-docs';
import { reconciliationOverview, reconciliationRequested } from './admin.responses';
import { CurrentAdmin, Roles } from './roles.decorator';

@ApiTags('admin: reconciliation')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/reconciliation')
export class AdminReconciliationController {
  constructor(private readonly reconciliation: ReconciliationService) {}

  @Get()
  @ApiOperation({ summary: 'Per reconcilable endpoint: cursor, last success, recent runs (events found missing, errors)' })
  @ApiZodResponse(200, reconciliationOverview)
  async overview() {
    return { endpoints: await this.reconciliation.overview() };
  }

  @Post('run')
  @HttpCode(202)
  @Roles('operator')
  @ApiOperation({ summary: 'Request a reconciliation run (audited); an instance with the maintenance role executes it' })
  @ApiZodBody(reconciliationRunBody)
  @ApiResponse({ status: 400, description: '`reason_required`, `invalid_window`, `window_too_old`, `not_reconcilable`, `invalid_body`' })
  @ApiResponse({ status: 404, description: '`unknown_endpoint`' })
  @ApiZodResponse(202, reconciliationRequested)
  run(@CurrentAdmin() who: AdminPrincipal, @Body() body: unknown) {
    const request = parseOr400(reconciliationRunBody, body, 'invalid_body', {
      ...BODY_REASONS,
      from: 'invalid_window',
      to: 'invalid_window',
    });
    return this.reconciliation.request(who, request);
  }
}
