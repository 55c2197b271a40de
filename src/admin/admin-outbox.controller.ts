import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { NotFoundError } from '../common/errors';
import { OutboxAdminService } from '../outbox/outbox-admin.service';
import { AdminPrincipal, hasRole, scopeOf } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { decodeCursor, encodeCursor, parseId } from './admin-cursor';
import { BODY_REASONS, LIST_QUERY_REASONS, outboxListQuery, parseOr400, reasonBody, resolveBody } from './admin.schemas';
import { ApiAdmin, ApiZodBody, ApiZodQuery, ApiZodResponse } from './api-docs';
import { outboxEntry, outboxEntryPage, outboxStatusChange } from './admin.responses';
import { CurrentAdmin, Roles, TenantScoped } from './roles.decorator';

@ApiTags('admin: outbox')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@TenantScoped()
@Controller('admin/outbox')
export class AdminOutboxController {
  constructor(private readonly outbox: OutboxAdminService) {}

  @Get()
  @ApiOperation({ summary: 'List outbox entries (metadata only), newest first' })
  @ApiZodQuery(outboxListQuery)
  @ApiResponse({ status: 400, description: '`invalid_filter`, `invalid_cursor` or `invalid_limit`' })
  @ApiZodResponse(200, outboxEntryPage)
  async list(@CurrentAdmin() who: AdminPrincipal, @Query() query: unknown) {
    const { limit, cursor, ...filter } = parseOr400(outboxListQuery, query, 'invalid_filter', LIST_QUERY_REASONS);
    const page = await this.outbox.list({ ...filter, tenants: scopeOf(who) }, { limit, after: decodeCursor(cursor) }, false);
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One outbox entry; the payload only for operators' })
  @ApiZodResponse(200, outboxEntry)
  async get(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string) {
    const entry = await this.outbox.get(parseId(id), scopeOf(who), hasRole(who, 'operator') ? who : undefined);
    if (!entry) throw new NotFoundError('outbox_entry_not_found', 'no outbox entry with this id');
    return entry;
  }

  @Post(':id/retry')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({ summary: 'Send a dead or unresolved entry again under the same operation key' })
  @ApiZodBody(reasonBody)
  @ApiResponse({ status: 409, description: '`not_retryable`, or `recipient_erased` (an erasure blanked it: never sent)' })
  @ApiZodResponse(200, outboxStatusChange)
  retry(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string, @Body() body: unknown) {
    const entryId = parseId(id);
    const { reason } = parseOr400(reasonBody, body, 'invalid_body', BODY_REASONS);
    return this.outbox.retry(who, entryId, reason, scopeOf(who));
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({
    summary:
      "Record an operator's decision on an unresolved or dead entry: delivered (settled; releases the entries of its aggregate held behind it), or retry",
  })
  @ApiZodBody(resolveBody)
  @ApiResponse({ status: 409, description: '`not_unresolved`, or `recipient_erased` for a retry (an erasure blanked it: never sent)' })
  @ApiZodResponse(200, outboxStatusChange)
  resolve(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string, @Body() body: unknown) {
    const entryId = parseId(id);
    const { outcome, reason } = parseOr400(resolveBody, body, 'invalid_body', BODY_REASONS);
    return this.outbox.resolve(who, entryId, outcome, reason, scopeOf(who));
  }
}
