import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerToken } from '../common/bearer-token';
import { UnauthorizedError } from '../common/errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { MetricsRegistry } from '../observability/metrics.registry';

@ApiTags('operations')
@Controller()
export class MetricsController {
  private readonly tokenDigest?: Buffer;

  constructor(
    private readonly registry: MetricsRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.tokenDigest = config.metricsToken ? digest(config.metricsToken) : undefined;
  }

  @Get('metrics')
  @ApiOperation({ summary: 'Prometheus metrics (Bearer METRICS_TOKEN when configured)' })
  @ApiProduces('text/plain')
  @ApiBearerAuth('metrics')
  async metrics(@Req() req: Request, @Res() res: Response): Promise<void> {
    if (this.tokenDigest) {
      const token = bearerToken(req.headers.authorization);
      if (token === undefined) throw new UnauthorizedError('missing_token', 'metrics need a Bearer token');
      if (!timingSafeEqual(digest(token), this.tokenDigest)) throw new UnauthorizedError('invalid_token', 'metrics need a Bearer token');
    }
    const body = await this.registry.metrics();
    res.setHeader('Content-Type', this.registry.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).send(body);
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
