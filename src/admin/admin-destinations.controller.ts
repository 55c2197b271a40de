import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { OutboxAdminService } from '../outbox/outbox-admin.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { ApiAdmin, ApiZodResponse } from './api-docs';
import { destinationList } from './admin.responses';

@ApiTags('admin: destinations')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/destinations')
export class AdminDestinationsController {
  constructor(private readonly outbox: OutboxAdminService) {}

  @Get()
  @ApiOperation({
    summary: "Each destination's settings, circuit (closed, open, half_open), Retry-After pause and open entries (held among them)",
  })
  @ApiZodResponse(200, destinationList)
  async list() {
    return { items: await this.outbox.destinationList() };
  }
}
