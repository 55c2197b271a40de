import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Response } from 'express';
import { AppError } from './errors';
import { isDatabaseUnavailable, isInvalidData } from '../database/database-errors';

const REASON_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'body_too_large',
  415: 'unsupported_media_type',
};

/** Maps every error to JSON with a stable `reason`; 5xx bodies say nothing internal. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger(HttpExceptionFilter.name);

  catch(error: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;

    if (error instanceof AppError) {
      for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
      res.status(error.status).json({ status: 'error', reason: error.reason, message: error.message });
      return;
    }
    if (error instanceof HttpException) {
      const status = error.getStatus();
      if (status < 500) {
        const reason = REASON_BY_STATUS[status] ?? 'bad_request';
        res.status(status).json({ status: 'error', reason, message: reason });
        return;
      }
    }
    if (isInvalidData(error)) {
      // Input PostgreSQL refuses (a NUL byte, a value out of range) that validation let through: still the caller's 400.
      res.status(400).json({ status: 'error', reason: 'invalid_input', message: 'a value in the request cannot be stored or compared' });
      return;
    }
    const errorId = randomUUID();
    if (isDatabaseUnavailable(error)) {
      this.logger.warn({ errorId, err: describe(error) }, 'database unavailable');
      res.setHeader('Retry-After', '5');
      res.status(503).json({ status: 'error', reason: 'database_unavailable', errorId });
      return;
    }
    this.logger.error({ errorId, err: describe(error) }, 'unhandled error');
    res.status(500).json({ status: 'error', reason: 'internal_error', errorId });
  }
}

/** Name, code and message only: never a request body or a query's parameters. */
export function describe(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { name: error.name, code, message: error.message.slice(0, 500) };
}
