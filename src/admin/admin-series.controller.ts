import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ActivityService } from '../activity/activity.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { AdminPrincipal, scopeOf } from './admin-auth';
import { parseOr400, seriesQuery } from './admin.schemas';
import { ApiAdmin, ApiZodQuery, ApiZodResponse } from './api-docs';
import { series } from './admin.responses';
import { CurrentAdmin, TenantScoped } from './roles.decorator';

@ApiTags('admin: stats')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@TenantScoped()
@Controller('admin/series')
export class AdminSeriesController {
  constructor(private readonly activity: ActivityService) {}

  @Get()
  @ApiOperation({
    summary:
      'Time series for charts over the last 1h (1-minute buckets), 24h (10 minutes) or 7d (1 hour): accepted, done, quarantined per endpoint; delivered and failed attempts per destination; the worst backlog and oldest pending age in each bucket. Rolled up each minute by the maintenance role',
  })
  @ApiZodQuery(seriesQuery)
  @ApiResponse({ status: 400, description: '`invalid_query`' })
  @ApiZodResponse(200, series)
  series(@CurrentAdmin() who: AdminPrincipal, @Query() query: unknown) {
    const { window, endpoint, destination } = parseOr400(seriesQuery, query, 'invalid_query');
    return this.activity.series(window, { endpoint, destination }, scopeOf(who));
  }
}
