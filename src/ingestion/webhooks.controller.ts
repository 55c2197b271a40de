import { Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { IngestionResult, IngestionService } from './ingestion.service';
import { readRawBody } from './raw-body';

@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly ingestion: IngestionService) {}

  /** 200 only once the event is durably committed (or already was). */
  @Post(':endpointId')
  @HttpCode(200)
  async receive(@Param('endpointId') endpointId: string, @Req() req: Request): Promise<IngestionResult> {
    const endpoint = this.ingestion.endpoint(endpointId);
    const rawBody = await readRawBody(req, endpoint.maxBodyBytes);
    return this.ingestion.receive(endpoint, req.headers, rawBody);
  }
}
