import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { ApiAdmin, ApiZodResponse } from './api-docs';
import { session } from './admin.responses';
import { CurrentAdmin, TenantScoped } from './roles.decorator';

@ApiTags('admin: session')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
// It answers the caller's own token and nothing else, so a token limited to tenants signs in too.
@TenantScoped()
@Controller('admin/session')
export class AdminSessionController {
  @Get()
  @ApiOperation({ summary: 'Who this token is: its name, role and tenants if limited (the console signs in with it)' })
  @ApiZodResponse(200, session)
  session(@CurrentAdmin() who: AdminPrincipal) {
    return who;
  }
}
