import { Injectable } from '@nestjs/common';
import { Span, SpanKind } from '@opentelemetry/api';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { errorResponse } from '../common/error-response';
import { BadRequestError } from '../common/errors';
import { Tracing } from '../tracing/tracing';
import { IngestionService } from './ingestion.service';
import { IntakeBudget } from './intake-budget';
import type { PlainAnswer } from './webhook-provider';

/** POST /webhooks/:endpointId, matched like Express would: any case, an optional trailing slash, any query. */
const WEBHOOK_PATH = /^\/webhooks\/([^/?]+)\/?(?:\?.*)?$/i;

/**
 * `POST /webhooks/:endpointId`, served on Node's HTTP server ahead of Express.
 * It is the one hot route: Express and Nest's router cost more CPU per request
 * than verifying and committing the event (docs/performance.md), and the route
 * needs none of their features. Everything else falls through to the Nest app.
 */
@Injectable()
export class WebhookRoute {
  constructor(
    private readonly ingestion: IngestionService,
    private readonly tracing: Tracing,
    private readonly budget: IntakeBudget,
  ) {}

  /** A request listener serving webhooks and handing every other request to `app`. */
  listener(app: RequestListener): RequestListener {
    return (req, res) => {
      const endpointId = req.method === 'POST' || req.method === 'GET' ? WEBHOOK_PATH.exec(req.url ?? '')?.[1] : undefined;
      // A GET is ours only for an endpoint that expects a subscription challenge; otherwise the app's 404 as before.
      if (endpointId === undefined || (req.method === 'GET' && !this.answersGet(endpointId))) return app(req, res);
      void (this.tracing.enabled ? this.receiveTraced(endpointId, req, res) : this.receive(endpointId, req, res));
    };
  }

  /** 200 only once the event is durably committed (or already was); every failure has a stable `reason`. */
  private async receive(rawEndpointId: string, req: IncomingMessage, res: ServerResponse, span?: Span): Promise<void> {
    // The body's bytes count against the shared budget until the answer: they are held until the commit.
    // A client that disconnects meanwhile changes nothing: the accept runs to its end either way.
    const hold = this.budget.open(req);
    try {
      const result = await this.ingestion.receive(decodeParam(rawEndpointId), req, hold, span);
      span?.setAttribute('webhook.outcome', result.status);
      if (result.answer) sendPlain(res, result.answer);
      else if (result.status === 'handshake') send(res, 200, result.reply);
      else send(res, 200, result);
    } catch (error) {
      const { status, headers, body } = errorResponse(error);
      span?.setAttribute('webhook.outcome', (body as { reason?: string }).reason ?? 'error');
      send(res, status, body, headers);
    } finally {
      hold.close();
    }
  }

  private answersGet(rawEndpointId: string): boolean {
    try {
      return this.ingestion.answersGet(decodeURIComponent(rawEndpointId));
    } catch {
      return false;
    }
  }

  /**
   * The request as a new trace. The provider's own `traceparent` is untrusted input
   * from across the trust boundary: linked, never adopted as the parent.
   */
  private async receiveTraced(rawEndpointId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const link = this.tracing.link(req.headers.traceparent as string | undefined, { 'link.untrusted': true });
    const span = this.tracing.startSpan('POST /webhooks/:endpointId', {
      kind: SpanKind.SERVER,
      root: true,
      links: link ? [link] : undefined,
      attributes: { 'http.request.method': req.method ?? 'POST', 'http.route': '/webhooks/:endpointId' },
    });
    try {
      await this.tracing.run(span, () => this.receive(rawEndpointId, req, res, span));
    } finally {
      span.setAttribute('http.response.status_code', res.statusCode);
      span.end();
    }
  }
}

/** The path parameter decoded as Express would: a malformed escape is the caller's 400. */
function decodeParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new BadRequestError('bad_request', 'malformed percent-encoding in the path');
  }
}

function send(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const json = JSON.stringify(body);
  // Object.assign: a spread followed by more keys costs more, once per request.
  res.writeHead(
    status,
    Object.assign({}, headers, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) }),
  );
  res.end(json);
}

/** A sender's own answer: text/plain (never sniffed as HTML, since a challenge echoes what the request sent), or 204. */
function sendPlain(res: ServerResponse, answer: PlainAnswer): void {
  if (res.headersSent) return;
  if (answer.status === 204 || answer.text === undefined) {
    res.writeHead(answer.status === 204 ? 204 : 200);
    res.end();
    return;
  }
  res.writeHead(answer.status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(answer.text),
  });
  res.end(answer.text);
}
