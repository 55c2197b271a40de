import { HttpException, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppError } from './errors';
import { isDatabaseUnavailable, isInvalidData } from './database-errors';

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: { status: 'error'; reason: string; message?: string; errorId?: string };
}

const REASON_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'body_too_large',
  415: 'unsupported_media_type',
};

const logger = new Logger('HttpError');

/**
 * Every error as JSON with a stable `reason`; 5xx bodies say nothing internal.
 * Shared by the Nest exception filter and the webhook route, so both answer alike.
 */
export function errorResponse(error: unknown): ErrorResponse {
  if (error instanceof AppError) {
    return { status: error.status, headers: error.headers, body: { status: 'error', reason: error.reason, message: error.message } };
  }
  if (error instanceof HttpException && error.getStatus() < 500) {
    const reason = REASON_BY_STATUS[error.getStatus()] ?? 'bad_request';
    return { status: error.getStatus(), headers: {}, body: { status: 'error', reason, message: reason } };
  }
  if (isInvalidData(error)) {
    // Input PostgreSQL refuses (a NUL byte, a value out of range) that validation let through: still the caller's 400.
    return {
      status: 400,
      headers: {},
      body: { status: 'error', reason: 'invalid_input', message: 'a value in the request cannot be stored or compared' },
    };
  }
  const errorId = randomUUID();
  if (isDatabaseUnavailable(error)) {
    logger.warn({ errorId, err: describe(error) }, 'database unavailable');
    return { status: 503, headers: { 'Retry-After': '5' }, body: { status: 'error', reason: 'database_unavailable', errorId } };
  }
  logger.error({ errorId, err: describe(error) }, 'unhandled error');
  return { status: 500, headers: {}, body: { status: 'error', reason: 'internal_error', errorId } };
}

/** Name, code and message only: never a request body or a query's parameters. */
export function describe(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { name: error.name, code, message: error.message.slice(0, 500) };
}
