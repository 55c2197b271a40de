import { Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { IngestionResult, IngestionService } from './ingestion.service';
import { readRawBody } from './raw-body';
import { ApiBody, ApiConsumes, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';

@ApiTags('webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly ingestion: IngestionService) {}

  /** 200 only once the event is durably committed (or already was). */
  @Post(':endpointId')
  @ApiOperation({
    summary: 'Receive a provider webhook (Stripe, GitHub, Standard Webhooks, Shopify)',
    description:
      'The raw body is verified with the endpoint secrets (signature, and timestamp where signed). 200 only once the event is durably committed as pending work; a duplicate gets the same 200.',
  })
  @ApiConsumes('application/json')
  @ApiBody({ schema: { type: 'object', description: 'the provider event, as the provider sent it' } })
  @ApiResponse({ status: 200, description: '`{status: accepted | duplicate | ignored, eventId}`' })
  @ApiResponse({ status: 400, description: 'malformed after verification' })
  @ApiResponse({ status: 401, description: 'missing, invalid or stale signature' })
  @ApiResponse({ status: 404, description: 'unknown endpoint' })
  @ApiResponse({ status: 413, description: 'body too large' })
  @ApiResponse({ status: 503, description: 'database unavailable or commit outcome unknown (Retry-After)' })
  @HttpCode(200)
  async receive(@Param('endpointId') endpointId: string, @Req() req: Request): Promise<IngestionResult> {
    const endpoint = this.ingestion.endpoint(endpointId);
    const rawBody = await readRawBody(req, endpoint.maxBodyBytes);
    return this.ingestion.receive(endpoint, req.headers, rawBody);
  }
}
