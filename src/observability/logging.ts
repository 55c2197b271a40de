import { DynamicModule } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import type { Options } from 'pino-http';
import { AppConfig } from '../config/app-config';
import { traceLogFields } from '../tracing/tracing';

/** Headers that authenticate a caller or a message: never in a log line. */
export const SECRET_HEADERS = [
  'authorization',
  'cookie',
  'set-cookie',
  'stripe-signature',
  'x-hub-signature',
  'x-hub-signature-256',
  'x-shopify-hmac-sha256',
  'webhook-signature',
  'svix-signature',
];

/** Keys whose values are secrets or bodies, at the top level and one level down. */
const SECRET_KEYS = ['body', 'rawBody', 'payload', 'secret', 'secrets', 'token', 'password', 'signature'];

export const REDACT_PATHS: string[] = [
  ...SECRET_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `res.headers["${h}"]`, `headers["${h}"]`, `*.headers["${h}"]`]),
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`]),
  'req.body',
];

/**
 * pino-http options: JSON lines at config.logLevel, one short line per request
 * (method, path, status, duration: no headers, no query string, no body), and
 * log lines inside a request carry only its id.
 */
export function pinoHttpOptions(config: Pick<AppConfig, 'logLevel' | 'tracing'>): Options {
  return {
    level: config.logLevel,
    // Tracing on: the active span's ids in every line (off: no mixin, no cost).
    mixin: config.tracing.enabled ? traceLogFields : undefined,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    quietReqLogger: true,
    autoLogging: true,
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
    serializers: {
      req: (req: IncomingMessage & { id?: unknown }) => ({ id: req.id, method: req.method, path: (req.url ?? '').split('?')[0] }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
      err: serializeError,
    },
  };
}

/** `err` in a log line: an Error's name, code and message, or the short string most callers already made of it. */
export function serializeError(err: unknown): unknown {
  if (typeof err === 'string') return err.slice(0, 500);
  const e = err as (Error & { code?: unknown }) | undefined;
  return { type: e?.name, code: e?.code, message: String(e?.message ?? '').slice(0, 500) };
}

/**
 * stdout, written synchronously and shared by every logger of the process. pino's
 * default writes asynchronously and flushes on 'exit', but a process that ends
 * by its signal (as after a graceful shutdown) gets no 'exit' event: the last
 * lines, the shutdown's own, were lost. A pipe write is a few microseconds.
 */
let destination: ReturnType<typeof pino.destination> | undefined;

/** The production logger: nestjs-pino over pino-http (tests pass their own LoggerService instead). */
export function pinoLoggerModule(config: Pick<AppConfig, 'logLevel' | 'tracing'>): DynamicModule {
  destination ??= pino.destination({ dest: 1, sync: true });
  return LoggerModule.forRoot({
    // The webhook route (WebhookRoute) never reaches pino-http: it logs each outcome itself, with the event's ids.
    pinoHttp: [pinoHttpOptions(config), destination],
  });
}
