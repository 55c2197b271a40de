import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { NotFoundError } from '../common/errors';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { TimelineService } from '../timeline/timeline.service';
import { EffectPreviewService } from '../timeline/effect-preview.service';
import { AdminPrincipal, hasRole, scopeOf } from './admin-auth';
import { AdminAuthGuard } from './admin-auth.guard';
import { decodeCursor, encodeCursor, parseId } from './admin-cursor';
import { BODY_REASONS, bulkReplayBody, emptyBody, inboxListQuery, LIST_QUERY_REASONS, parseOr400, reasonBody } from './admin.schemas';
import { ApiAdmin, ApiZodBody, ApiZodQuery, ApiZodResponse } from './api-docs';
import { bulkReplayResult, effectPreview, inboxEvent, inboxEventPage, inboxStatusChange, timeline } from './admin.responses';
import { CurrentAdmin, Roles, TenantScoped } from './roles.decorator';

@ApiTags('admin: inbox')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@TenantScoped()
@Controller('admin/inbox')
export class AdminInboxController {
  constructor(
    private readonly inbox: InboxAdminService,
    private readonly timelines: TimelineService,
    private readonly previews: EffectPreviewService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List inbox events (metadata only), newest first' })
  @ApiZodQuery(inboxListQuery)
  @ApiResponse({ status: 400, description: '`invalid_filter`, `invalid_cursor` or `invalid_limit`' })
  @ApiZodResponse(200, inboxEventPage)
  async list(@CurrentAdmin() who: AdminPrincipal, @Query() query: unknown) {
    const { limit, cursor, ...filter } = parseOr400(inboxListQuery, query, 'invalid_filter', LIST_QUERY_REASONS);
    const page = await this.inbox.list({ ...filter, tenants: scopeOf(who) }, { limit, after: decodeCursor(cursor) });
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }

  @Post('replay')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({
    summary:
      'Replay settled events (done, ignored, quarantined) matching a filter; dryRun changes nothing: it counts, and previews the effects of the first 20',
  })
  @ApiZodBody(bulkReplayBody)
  @ApiResponse({ status: 503, description: '`preview_busy` (dry run): a lock the preview needed is held; retry shortly' })
  @ApiZodResponse(200, bulkReplayResult)
  async bulkReplay(@CurrentAdmin() who: AdminPrincipal, @Body() body: unknown) {
    const { filter, dryRun, reason } = parseOr400(bulkReplayBody, body, 'invalid_body', BODY_REASONS);
    const { previewIds, ...result } = await this.inbox.bulkReplay(who, { ...filter, tenants: scopeOf(who) }, dryRun, reason);
    return dryRun ? { ...result, previews: await this.previews.previewMany(previewIds ?? [], scopeOf(who)) } : result;
  }

  @Get(':id')
  @ApiOperation({ summary: 'One inbox event; the payload only for operators' })
  @ApiZodResponse(200, inboxEvent)
  async get(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string) {
    const event = await this.inbox.get(parseId(id), scopeOf(who), hasRole(who, 'operator') ? who : undefined);
    if (!event) throw new NotFoundError('inbox_event_not_found', 'no inbox event with this id');
    return event;
  }

  @Get(':id/timeline')
  @ApiOperation({
    summary:
      "One event's story in order: receipts, processing attempts, the order transition, operations and their delivery attempts, operator actions",
  })
  @ApiZodResponse(200, timeline)
  async timeline(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string) {
    const timeline = await this.timelines.ofEvent(parseId(id), scopeOf(who));
    if (!timeline) throw new NotFoundError('inbox_event_not_found', 'no inbox event with this id');
    return timeline;
  }

  @Post(':id/replay')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({ summary: 'Re-queue one settled event with its identity unchanged' })
  @ApiZodBody(reasonBody)
  @ApiResponse({ status: 409, description: '`not_replayable` (pending or processing) or `payload_purged`' })
  @ApiZodResponse(200, inboxStatusChange)
  replay(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string, @Body() body: unknown) {
    const eventId = parseId(id);
    const { reason } = parseOr400(reasonBody, body, 'invalid_body', BODY_REASONS);
    return this.inbox.replay(who, eventId, reason, scopeOf(who));
  }

  @Post(':id/preview')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({
    summary:
      "What replaying one event would do now: the worker's outcome, the order transition and the outbox operations, " +
      'computed by its handler in a transaction that is always rolled back (no provider call, no lock kept)',
  })
  @ApiZodBody(emptyBody)
  @ApiResponse({ status: 400, description: '`invalid_id` or `invalid_body` (the body carries nothing)' })
  @ApiResponse({ status: 404, description: '`inbox_event_not_found` (also for an event of a tenant outside the token)' })
  @ApiResponse({ status: 503, description: '`preview_busy`: a lock the preview needed is held (e.g. by a worker); retry shortly' })
  @ApiZodResponse(200, effectPreview)
  preview(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string, @Body() body: unknown) {
    const eventId = parseId(id);
    parseOr400(emptyBody, body, 'invalid_body');
    return this.previews.preview(eventId, scopeOf(who));
  }

  @Post(':id/quarantine')
  @HttpCode(200)
  @Roles('operator')
  @ApiOperation({ summary: 'Stop a pending or processing event' })
  @ApiZodBody(reasonBody)
  @ApiResponse({ status: 409, description: '`not_quarantinable`' })
  @ApiZodResponse(200, inboxStatusChange)
  quarantine(@CurrentAdmin() who: AdminPrincipal, @Param('id') id: string, @Body() body: unknown) {
    const eventId = parseId(id);
    const { reason } = parseOr400(reasonBody, body, 'invalid_body', BODY_REASONS);
    return this.inbox.quarantine(who, eventId, reason, scopeOf(who));
  }
}
