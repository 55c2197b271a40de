import { DynamicModule, Module } from '@nestjs/common';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { Logger, PARAMS_PROVIDER_TOKEN, Params, PinoLogger } from 'nestjs-pino';
import pino from 'pino';
import { pinoHttp, type Options } from 'pino-http';
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

const CENSOR = '[redacted]';
const SECRET_KEY_SET = new Set(SECRET_KEYS);
/** Fields pino serializes with the serializers below, which keep only safe fields (no headers, no body). */
const SERIALIZED = new Set(['req', 'res', 'err']);

/**
 * A log line's fields with secrets censored: a key of SECRET_KEYS and a `headers` object's
 * SECRET_HEADERS, at the top level and one level down (what pino's `redact` paths `k`, `*.k`,
 * `headers["h"]` and `*.headers["h"]` say). Copy on write: the caller's object is never changed,
 * and a line with nothing to censor (every line of the hot path) is returned as it came, with no
 * allocation. pino's own `redact` parsed every path again for each top-level field of each line:
 * 17 us of CPU per line against 2.3 us for this pass, the largest JavaScript cost of an accepted
 * event (docs/performance.md).
 */
export function redactLogFields(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    const clean = SECRET_KEY_SET.has(key)
      ? CENSOR
      : key === 'headers'
        ? censorHeaders(value)
        : SERIALIZED.has(key)
          ? value
          : censorNested(value);
    if (clean !== value) (out ??= { ...fields })[key] = clean;
  }
  return out ?? fields;
}

function censorNested(value: unknown): unknown {
  if (!isRecord(value)) return value;
  const clean = censorKeys(value, SECRET_KEYS);
  const headers = censorHeaders(value.headers);
  return headers === value.headers ? clean : { ...clean, headers };
}

function censorHeaders(headers: unknown): unknown {
  return isRecord(headers) ? censorKeys(headers, SECRET_HEADERS) : headers;
}

/** `value` with each of `keys` it has censored: a copy if any, else `value` itself. */
function censorKeys(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key of keys) {
    if (Object.prototype.hasOwnProperty.call(value, key)) (out ??= { ...value })[key] = CENSOR;
  }
  return out ?? value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * pino-http options: JSON lines at config.logLevel, one short line per request
 * (method, path, status, duration and its id: no headers, no query string, no body).
 */
export function pinoHttpOptions(config: Pick<AppConfig, 'logLevel' | 'tracing'>): Options {
  return {
    level: config.logLevel,
    // Tracing on: the active span's ids in every line (off: no mixin, no cost).
    mixin: config.tracing.enabled ? traceLogFields : undefined,
    formatters: { log: redactLogFields },
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

@Module({})
class PinoLoggingModule {}

/**
 * The production logger: nestjs-pino's LoggerService (what Nest's Logger writes through) over one
 * pino logger with these options. Not nestjs-pino's LoggerModule: its middleware runs every Nest
 * request inside AsyncLocalStorage, so that lines logged while it runs carry the request's id, and
 * on Node 20 the first such request turns on async hooks for the whole process, for good. Every
 * promise, timer and socket of the webhook route, the worker and the relay then pays for them:
 * 45 us of service CPU per event at 300 events/s, 8% per accepted request in bulk
 * (docs/performance.md). Each request still gets its own line (requestLogger, below).
 */
export function pinoLoggerModule(config: Pick<AppConfig, 'logLevel' | 'tracing'>): DynamicModule {
  const params: Params = { pinoHttp: [pinoHttpOptions(config), stdout()] };
  return {
    module: PinoLoggingModule,
    global: true,
    providers: [Logger, PinoLogger, { provide: PARAMS_PROVIDER_TOKEN, useValue: params }],
    exports: [Logger, PinoLogger],
  };
}

/** Express middleware: one pino-http line per request that reaches the Nest app (the webhook route never does). */
export function requestLogger(config: Pick<AppConfig, 'logLevel' | 'tracing'>): RequestListener {
  return pinoHttp(pinoHttpOptions(config), stdout());
}

function stdout(): ReturnType<typeof pino.destination> {
  destination ??= pino.destination({ dest: 1, sync: true });
  return destination;
}
