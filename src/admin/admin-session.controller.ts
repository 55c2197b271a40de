import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { ApiAdmin } from './api-docs';
import { CurrentAdmin } from './roles.decorator';

@ApiTags('admin: session')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/session')
export class AdminSessionController {
  @Get()
  @ApiOperation({ summary: 'Who this token is: its name and role (the console signs in with it)' })
  session(@CurrentAdmin() who: AdminPrincipal) {
    return who;
  }
}
