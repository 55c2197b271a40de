import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { PayloadKeysService } from '../inbox/payload-keys.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { ApiAdmin, ApiZodResponse } from './api-docs';
import { payloadKeyReport } from './admin.responses';

@ApiTags('admin: payload keys')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@Controller('admin/payload-keys')
export class AdminPayloadKeysController {
  constructor(private readonly payloadKeys: PayloadKeysService) {}

  @Get()
  @ApiOperation({ summary: "Stored payloads per key id (null: clear), this instance's key ring, and what re-encryption has left" })
  @ApiZodResponse(200, payloadKeyReport)
  keys() {
    return this.payloadKeys.report();
  }
}
