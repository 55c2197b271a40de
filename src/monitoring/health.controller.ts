import { Controller, Get, HttpException, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { Response } from 'express';
import { DataSource } from 'typeorm';

/** A readiness probe must answer before the orchestrator's own timeout. */
const READY_TIMEOUT_MS = 2_000;

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
  ) {}

  /** The process is up and serving HTTP; no dependency is checked (a restart would not fix one). */
  @Get('live')
  @HealthCheck()
  @ApiOperation({ summary: 'Liveness: the process answers' })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /** Ready for traffic: the database answers and takes writes, and every migration is applied; 503 otherwise. */
  @Get('ready')
  @HealthCheck()
  @ApiOperation({ summary: 'Readiness: database reachable and migrations applied (503 when not)' })
  async ready(@Res({ passthrough: true }) res: Response): Promise<HealthCheckResult | object> {
    try {
      return await this.health.check([() => this.database(), () => this.migrations()]);
    } catch (error) {
      // Terminus throws a 503 HttpException; answer it here, with its details, not as a generic 5xx.
      if (error instanceof HttpException) {
        res.status(error.getStatus());
        return error.getResponse() as object;
      }
      throw error;
    }
  }

  private async database() {
    const check = this.indicators.check('database');
    try {
      // A server that answers but refuses writes (a demoted primary, a standby, read-only mode on a
      // full disk) accepts no webhook: every one is 503, so it is not ready.
      const [{ read_only }]: { read_only: string }[] = await withTimeout(
        this.dataSource.query(`SELECT current_setting('transaction_read_only') AS read_only`),
        READY_TIMEOUT_MS,
      );
      return read_only === 'on' ? check.down({ message: 'the database is read-only' }) : check.up();
    } catch (error) {
      return check.down({ message: describeFailure(error) });
    }
  }

  private async migrations() {
    const check = this.indicators.check('migrations');
    try {
      const pending = await withTimeout(this.dataSource.showMigrations(), READY_TIMEOUT_MS);
      return pending ? check.down({ message: 'pending migrations' }) : check.up();
    } catch (error) {
      return check.down({ message: describeFailure(error) });
    }
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** A short, credential-free description (never the connection string). */
function describeFailure(error: unknown): string {
  const code = (error as { code?: string })?.code;
  const message = error instanceof Error ? error.message : String(error);
  return (code ? `${code}: ` : '') + message.replace(/postgres(ql)?:\/\/\S+/gi, '[database url]').slice(0, 200);
}
