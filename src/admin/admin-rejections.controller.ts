import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RejectionLog } from '../ingestion/rejection-log';
import { AdminPrincipal, scopeOf } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { decodeCursor, encodeCursor } from './admin-cursor';
import { LIST_QUERY_REASONS, parseOr400, rejectionListQuery } from './admin.schemas';
import { ApiAdmin, ApiZodQuery, ApiZodResponse } from './api-docs';
import { rejectionPage } from './admin.responses';
import { CurrentAdmin, TenantScoped } from './roles.decorator';

@ApiTags('admin: rejections')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@TenantScoped()
@Controller('admin/rejections')
export class AdminRejectionsController {
  constructor(private readonly rejections: RejectionLog) {}

  @Get()
  @ApiOperation({
    summary:
      'The rejected-request log, newest first: time, endpoint, stable reason, client address and sizes of refused webhook requests ' +
      '(sampled: REJECTION_LOG_PER_MINUTE per endpoint; never a header value, a body or a secret)',
  })
  @ApiZodQuery(rejectionListQuery)
  @ApiResponse({ status: 400, description: '`invalid_filter`, `invalid_cursor` or `invalid_limit`' })
  @ApiZodResponse(200, rejectionPage)
  async list(@CurrentAdmin() who: AdminPrincipal, @Query() query: unknown) {
    const { limit, cursor, ...filter } = parseOr400(rejectionListQuery, query, 'invalid_filter', LIST_QUERY_REASONS);
    const page = await this.rejections.list({ ...filter, tenants: scopeOf(who) }, { limit, after: decodeCursor(cursor) });
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }
}
