import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminAuthGuard } from './admin-auth.guard';
import { decodeCursor, encodeCursor } from './admin-cursor';
import { auditListQuery, LIST_QUERY_REASONS, parseOr400 } from './admin.schemas';
import { ApiAdmin, ApiZodQuery, ApiZodResponse } from './api-docs';
import { auditRecordPage } from './admin.responses';
import { AuditService } from '../audit/audit.service';

@ApiTags('admin: audit')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/audit')
export class AdminAuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: 'Audit log of admin changes, newest first' })
  @ApiZodQuery(auditListQuery)
  @ApiZodResponse(200, auditRecordPage)
  async list(@Query() query: unknown) {
    const { limit, cursor, ...filter } = parseOr400(auditListQuery, query, 'invalid_filter', LIST_QUERY_REASONS);
    const page = await this.audit.list(filter, { limit, after: decodeCursor(cursor) });
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }
}
