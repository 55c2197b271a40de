import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Pool } from 'undici';
import type { DestinationSettings } from '../../config/destinations';
import { parseRetryAfterMs } from '../retry-policy';
import { DeliveryOptions, DeliveryResult } from './destination';

export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
}

/** What the client needs of a destination's settings. */
export type HttpClientSettings = Pick<DestinationSettings, 'url' | 'concurrency' | 'timeoutMs' | 'headers' | 'signingKey' | 'tls'> & {
  url: string;
};

/**
 * Keep-alive HTTP to one destination origin: a pool of at most `concurrency`
 * sockets, reused across deliveries, with the destination's credentials:
 * its headers on every request, a Standard Webhooks signature on every POST
 * when it has a signing key, a client certificate when it has one. The
 * response body is drained (never kept: it may echo personal data) so the
 * socket returns to the pool. Nothing here logs a header.
 */
export class DestinationHttpClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly signer?: Webhook;

  constructor(settings: HttpClientSettings) {
    const url = new URL(settings.url);
    this.basePath = url.pathname.replace(/\/+$/, '') + url.search;
    this.headers = settings.headers;
    if (settings.signingKey) this.signer = new Webhook(settings.signingKey, { format: 'raw' });
    const { cert, key, ca } = settings.tls ?? {};
    this.pool = new Pool(url.origin, {
      connections: settings.concurrency,
      keepAliveTimeout: 30_000,
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
      connectTimeout: Math.min(settings.timeoutMs, 10_000),
      ...(settings.tls ? { connect: { cert, key, ca } } : {}),
    });
  }

  /** `path` is appended to the base URL's path ('' for the base URL itself). */
  async send(
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<HttpReply> {
    // The destination's own headers first: the relay's (content type, key, signature) win.
    const all = Object.assign({}, this.headers, headers);
    const reply = await this.pool.request({ method, path: this.basePath + path || '/', headers: all, body, signal });
    await reply.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    return { status: reply.statusCode, headers: reply.headers as IncomingHttpHeaders };
  }

  /**
   * POSTs one operation under its Idempotency-Key and applies the outcome rules.
   * A body that cannot be built from the row will never be deliverable: dead.
   */
  async postOperation(
    path: string,
    operationKey: string,
    buildBody: () => string,
    { signal, traceparent }: DeliveryOptions,
    now: () => Date,
  ): Promise<DeliveryResult> {
    let body: string;
    try {
      body = buildBody();
    } catch (error) {
      return { kind: 'dead', error: `invalid payload: ${(error as Error).message}` };
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': operationKey };
    if (this.signer) {
      // Standard Webhooks: the key names the message (the same on every resend); the time is this attempt's.
      const at = now();
      headers['webhook-id'] = operationKey;
      headers['webhook-timestamp'] = String(Math.floor(at.getTime() / 1000));
      headers['webhook-signature'] = this.signer.sign(operationKey, at, body);
    }
    if (traceparent) headers.traceparent = traceparent;
    try {
      return classifyResponse(await this.send('POST', path, headers, body, signal), now());
    } catch (error) {
      return classifyError(error);
    }
  }

  async close(): Promise<void> {
    if (!this.pool.closed && !this.pool.destroyed) await this.pool.close();
  }
}

/** The outcome rules for an HTTP answer (listed in docs/extending.md). */
export function classifyResponse(reply: HttpReply, now: Date): DeliveryResult {
  const { status } = reply;
  if ((status >= 200 && status < 300) || status === 409) return { kind: 'delivered', statusCode: status };
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfterMs(reply.headers['retry-after'], now);
    return { kind: 'retry', statusCode: status, error: `HTTP ${status}`, outcomeUnknown: false, retryAfterMs, down: status === 503 };
  }
  // 408: the destination gave up reading the request, so it applied nothing; RFC 9110 says repeat it.
  if (status >= 400 && status < 500 && status !== 408) return { kind: 'dead', statusCode: status, error: `HTTP ${status}` };
  // 5xx (and anything unexpected, e.g. a 3xx we do not follow): try again later.
  return { kind: 'retry', statusCode: status, error: `HTTP ${status}`, outcomeUnknown: false, down: status >= 500 };
}

/** Errors raised before any byte of the request could have left: the outcome is known (nothing happened). */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** A request that failed without an answer: a timeout or reset may have been applied by the destination. */
export function classifyError(error: unknown): DeliveryResult {
  const err = error as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = err?.code ?? err?.cause?.code;
  if (code && NOT_SENT.has(code)) {
    return { kind: 'retry', error: `connect failed: ${code}`, outcomeUnknown: false, down: true };
  }
  const timedOut =
    err?.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || err?.name === 'AbortError';
  const what = timedOut ? 'timeout' : `request failed: ${code ?? err?.name ?? 'error'}`;
  return { kind: 'retry', error: what, outcomeUnknown: true, down: true };
}
