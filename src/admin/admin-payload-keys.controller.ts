import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { InboxService } from '../inbox/inbox.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { ApiAdmin } from './api-docs';

@ApiTags('admin: payload keys')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/payload-keys')
export class AdminPayloadKeysController {
  constructor(private readonly inbox: InboxService) {}

  @Get()
  @ApiOperation({ summary: "Stored payloads per key id (null: clear), this instance's key ring, and what re-encryption has left" })
  keys() {
    return this.inbox.payloadKeyReport();
  }
}
