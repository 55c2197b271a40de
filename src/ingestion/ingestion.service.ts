import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { Clock } from '../common/clock';
import { AppError, BadRequestError, NotFoundError, PayloadTooDeepError, ServiceUnavailableError } from '../common/errors';
import { jsonDepthExceeds, MAX_PAYLOAD_DEPTH, valueDepthExceeds } from '../common/json-depth';
import { describe } from '../common/error-response';
import { isInvalidData } from '../common/database-errors';
import { InboxService } from '../inbox/inbox.service';
import { EventIdentity } from '../inbox/inbox.types';
import { traceparentOf, Tracing } from '../tracing/tracing';
import { acceptanceRefusal } from '../inbox/acceptance';
import { IngestionMetrics } from './ingestion.metrics';
import { ProviderRegistry } from './provider.registry';
import { HandshakeReply, isHandshake, PlainAnswer, utf8Text, VerifiedEvent, WebhookRequest } from './webhook-provider';
import { omitPaths } from './omit-paths';
import { readRawBody } from './raw-body';
import type { BodyHold } from './intake-budget';
import { RejectionLog } from './rejection-log';

export interface IngestionResult {
  status: 'accepted' | 'duplicate' | 'ignored';
  eventId: string;
  reason?: string;
}

/** A webhook's outcome with the answer its sender expects when that is not the JSON result (Adyen's `[accepted]`). */
export interface WebhookOutcome extends IngestionResult {
  answer?: PlainAnswer;
}

/** An insert-if-absent's outcome, with what the webhook path counts and logs. */
interface Accepted extends IngestionResult {
  sourceScope: string;
  /** Undefined for a duplicate found under a former scope (WebhookProvider.formerNamespaces). */
  inboxId?: string;
  digestConflict: boolean;
}

/** The answer to a verified handshake: the provider's reply, nothing stored. */
export interface HandshakeResult {
  status: 'handshake';
  reply: Readonly<Record<string, unknown>>;
  /** Instead of `reply` as JSON. */
  answer?: PlainAnswer;
}

// jsonb refuses \u0000 (and the pg driver refuses the bytes in text): reject it
// before the insert so one bad body can never fail a shared commit.
const JSON_NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/i;

@Injectable()
export class IngestionService {
  private readonly logger = new Logger(IngestionService.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly providers: ProviderRegistry,
    private readonly inbox: InboxService,
    private readonly clock: Clock,
    private readonly metrics: IngestionMetrics,
    private readonly tracing: Tracing,
    private readonly rejections: RejectionLog,
  ) {}

  /**
   * One webhook request, end to end: the endpoint, its bounded raw body, the
   * signature, the inbox row (or a handshake's reply). Resolves only after that
   * row is committed; every failure is an AppError with a reason, counted and logged.
   * `span` (tracing on): the request's span; its children time the verification
   * and the commit, and the inbox row stores it for the worker to continue.
   * Spans carry names and outcomes only: never the body, a signature or a secret.
   */
  async receive(endpointId: string, req: IncomingMessage, hold: BodyHold, span?: Span): Promise<WebhookOutcome | HandshakeResult> {
    const endpoint = this.endpoint(endpointId);
    span?.setAttributes({
      'webhook.endpoint_id': endpoint.id,
      'webhook.provider': endpoint.provider,
      'webhook.tenant_id': endpoint.tenantId,
    });
    // A GET is a subscription challenge: no body, nothing stored.
    const rawBody = req.method === 'GET' ? Buffer.alloc(0) : await this.readBody(endpoint, req, hold);
    return this.accept(endpoint, req, { headers: req.headers, rawBody, method: req.method, url: req.url }, hold, span);
  }

  /** Whether `GET /webhooks/:endpointId` is this endpoint's challenge (else it is the app's 404, as before). */
  answersGet(endpointId: string): boolean {
    const endpoint = this.config.endpoints.get(endpointId);
    return endpoint !== undefined && this.providers.get(endpoint.provider).answersGet?.(endpoint) === true;
  }

  private endpoint(endpointId: string): EndpointConfig {
    const endpoint = this.config.endpoints.get(endpointId);
    if (!endpoint) {
      this.metrics.rejected('unknown', 'unknown_endpoint');
      throw new NotFoundError('unknown_endpoint', 'no such webhook endpoint');
    }
    return endpoint;
  }

  /** The request's exact bytes, within the endpoint's size limit; a refusal is counted and logged like any other. */
  private async readBody(endpoint: EndpointConfig, req: IncomingMessage, hold: BodyHold): Promise<Buffer> {
    try {
      return await readRawBody(req, endpoint.maxBodyBytes, hold);
    } catch (error) {
      throw this.rejected(endpoint, error, req, null);
    }
  }

  /**
   * Counts and logs a refused request (its reason only) and offers it to the rejected-request
   * log (sampled, written later); returns the error for the caller to throw.
   */
  private rejected(endpoint: EndpointConfig, error: unknown, req: IncomingMessage, receivedBytes: number | null): unknown {
    const reason = error instanceof AppError ? error.reason : 'invalid_request';
    this.metrics.rejected(endpoint.id, reason);
    this.logger.warn({ endpointId: endpoint.id, reason }, 'webhook rejected');
    this.rejections.record(endpoint, reason, error instanceof AppError ? error.status : 500, req, receivedBytes);
    return error;
  }

  /** Verifies, identifies and durably accepts one request's bytes (or answers its handshake). */
  private async accept(
    endpoint: EndpointConfig,
    req: IncomingMessage,
    request: WebhookRequest,
    hold: BodyHold,
    span?: Span,
  ): Promise<WebhookOutcome | HandshakeResult> {
    const { rawBody } = request;
    let event: VerifiedEvent;
    let text: string;
    const verify = span && this.tracing.startSpan('webhook.verify');
    try {
      let verified = this.providers.get(endpoint.provider).verify(request, endpoint, this.clock.now());
      // Only a provider that fetches a signing certificate returns a promise: the others stay synchronous.
      if (verified instanceof Promise) verified = await verified;
      if (isHandshake(verified)) return this.handshake(endpoint, verified);
      event = verified;
      if (event.payload !== undefined) {
        // A body that is not JSON (a form): its JSON form is stored, the digest stays of the bytes received.
        text = JSON.stringify(event.payload);
        if (jsonDepthExceeds(Buffer.from(text), MAX_PAYLOAD_DEPTH)) throw new PayloadTooDeepError(MAX_PAYLOAD_DEPTH);
      } else {
        // Before any walk of it (omit, the admin view): one pass over the bytes, no recursion.
        if (jsonDepthExceeds(rawBody, MAX_PAYLOAD_DEPTH)) throw new PayloadTooDeepError(MAX_PAYLOAD_DEPTH);
        // JSON is UTF-8 (RFC 8259): a lossy decode would store text whose bytes are not the signed ones.
        const decoded = utf8Text(rawBody);
        if (decoded === undefined) throw new BadRequestError('malformed_json', 'body is not valid UTF-8');
        text = decoded;
      }
      if (JSON_NUL_ESCAPE.test(text)) {
        throw new BadRequestError('unsupported_json', 'JSON strings may not contain \\u0000');
      }
    } catch (error) {
      throw this.rejected(endpoint, error, req, rawBody.length);
    } finally {
      verify?.end();
    }
    span?.setAttribute('webhook.event_type', event.eventType);

    let accepted: Accepted;
    try {
      accepted = await this.acceptVerified(endpoint, event, text, hash('sha256', rawBody, 'hex'), hold, span);
    } catch (error) {
      throw this.rejected(endpoint, error, req, rawBody.length);
    }
    const result = this.counted(endpoint, accepted);
    return event.answer ? { ...result, answer: event.answer } : result;
  }

  /** Counts and logs a webhook's outcome (an event read from the API is counted by reconciliation). */
  private counted(endpoint: EndpointConfig, { inboxId, sourceScope, digestConflict, ...result }: Accepted): IngestionResult {
    const log = { endpointId: endpoint.id, eventId: result.eventId, sourceScope, inboxId };
    if (digestConflict) this.metrics.digestConflict(endpoint.id);
    if (result.status === 'duplicate') this.metrics.duplicate(endpoint.id);
    else if (result.status === 'ignored') {
      this.metrics.ignored(endpoint.id, result.reason!);
      this.logger.log({ ...log, reason: result.reason }, 'webhook ignored');
    } else {
      this.metrics.accepted(endpoint.id);
      this.logger.log(log, 'webhook accepted');
    }
    return result;
  }

  /**
   * The acceptance path of an event read from the provider's API (reconciliation):
   * the provider identifies it as it would a webhook, then the same scope, `expect`
   * and type decisions and the same insert-if-absent. `verified_with = 'api'`; the
   * digest is of the API's JSON as stored, so a later webhook of the same event is a
   * duplicate, not a digest conflict.
   */
  async acceptFromApi(endpoint: EndpointConfig, object: unknown): Promise<IngestionResult> {
    const provider = this.providers.get(endpoint.provider);
    if (!provider.fromApi) throw new Error(`provider ${endpoint.provider} cannot identify events read from its API`);
    const event = provider.fromApi(object);
    if (valueDepthExceeds(object, MAX_PAYLOAD_DEPTH)) throw new PayloadTooDeepError(MAX_PAYLOAD_DEPTH);
    const text = JSON.stringify(object);
    if (JSON_NUL_ESCAPE.test(text)) throw new BadRequestError('unsupported_json', 'JSON strings may not contain \\u0000');
    const { status, eventId, reason } = await this.acceptVerified(endpoint, event, text, hash('sha256', text, 'hex'));
    return { status, eventId, reason };
  }

  /** Where an event's identity lives: trusted config plus what the provider verified. */
  identityOf(endpoint: EndpointConfig, object: unknown): EventIdentity {
    const event = this.providers.get(endpoint.provider).fromApi!(object);
    return { sourceScope: scopeOf(endpoint, event), eventId: event.eventId, occurredAt: event.occurredAt };
  }

  private async acceptVerified(
    endpoint: EndpointConfig,
    event: VerifiedEvent,
    text: string,
    payloadSha256: string,
    hold?: BodyHold,
    span?: Span,
  ): Promise<Accepted> {
    const sourceScope = scopeOf(endpoint, event);
    const ignoredReason = this.ignoredReason(endpoint, event);
    // Minimised before storage; the digest stays the evidence of the bytes received.
    const payloadJson = endpoint.omit ? omitPaths(text, endpoint.omit) : text;
    let result;
    const commit = span && this.tracing.startSpan('webhook.commit');
    try {
      // A webhook's place in the accept queue counts against its client's and its endpoint's shares (reconciliation has no client).
      hold?.admit(endpoint.id);
      const former = await this.storedUnderFormerScope(endpoint, event, sourceScope);
      if (former) return { status: 'duplicate', eventId: event.eventId, sourceScope: former, digestConflict: false };
      result = await this.inbox.accept({
        sourceScope,
        eventId: event.eventId,
        occurredAt: event.occurredAt,
        tenantId: endpoint.tenantId,
        provider: endpoint.provider,
        endpointId: endpoint.id,
        eventType: event.eventType,
        payloadJson,
        payloadSha256,
        verifiedWith: event.verifiedWith,
        sourceFacts: event.source,
        status: ignoredReason ? 'ignored' : 'pending',
        statusReason: ignoredReason,
        traceContext: span ? traceparentOf(span) : null,
        takesOverIgnored: this.takesOverIgnored(endpoint),
      });
    } catch (error) {
      if (isInvalidData(error)) throw new BadRequestError('unsupported_json', 'the JSON body cannot be stored');
      // The accept queue (or the client's or the endpoint's share of it) was full, or the commit did not answer within its deadline.
      if (error instanceof AppError && error.status === 503) throw error;
      // Unknown outcome: the provider must retry; the unique identity absorbs the retry.
      this.logger.error({ endpointId: endpoint.id, eventId: event.eventId, err: describe(error) }, 'accept failed');
      throw new ServiceUnavailableError();
    } finally {
      commit?.end();
    }

    if (result.digestConflict) {
      this.logger.warn(
        { endpointId: endpoint.id, eventId: event.eventId, sourceScope, inboxId: result.id },
        'same event id with a different payload: original kept',
      );
    }
    const stored = { eventId: event.eventId, sourceScope, inboxId: result.id, digestConflict: result.digestConflict };
    if (result.outcome === 'duplicate') return { status: 'duplicate', ...stored };
    if (ignoredReason) return { status: 'ignored', reason: ignoredReason, ...stored };
    return { status: 'accepted', ...stored };
  }

  /**
   * The scope an earlier version stored this event under, if it did (WebhookProvider.formerNamespaces):
   * the event is a duplicate there. One probe of the unique index per namespace; most providers have none.
   * Inside the accept's try, after its place in the accept queue: bounded like the insert, a failure a 503.
   */
  private async storedUnderFormerScope(endpoint: EndpointConfig, event: VerifiedEvent, current: string): Promise<string | undefined> {
    const scopes = this.formerScopes(endpoint).filter((scope) => scope !== current);
    if (scopes.length === 0) return undefined;
    const present = await this.inbox.present(
      scopes.map((sourceScope) => ({ sourceScope, eventId: event.eventId, occurredAt: event.occurredAt })),
    );
    return scopes.find((_, i) => present[i]);
  }

  /** Whether this endpoint's copies take over rows another endpoint of the tenant stored ignored (WebhookProvider.namespaceSpansEndpoints). */
  takesOverIgnored(endpoint: EndpointConfig): boolean {
    return this.providers.get(endpoint.provider).namespaceSpansEndpoints === true;
  }

  /** The scopes earlier versions stored this endpoint's events under (WebhookProvider.formerNamespaces). */
  formerScopes(endpoint: EndpointConfig): string[] {
    return (this.providers.get(endpoint.provider).formerNamespaces?.(endpoint) ?? []).map((n) => sourceScopeOf(endpoint, n));
  }

  private handshake(endpoint: EndpointConfig, verified: HandshakeReply): HandshakeResult {
    this.metrics.handshake(endpoint.id);
    this.logger.log({ endpointId: endpoint.id }, 'webhook handshake answered');
    return verified.answer
      ? { status: 'handshake', reply: verified.handshake, answer: verified.answer }
      : { status: 'handshake', reply: verified.handshake };
  }

  /** A verified event this endpoint acknowledges but does not act on. */
  private ignoredReason(endpoint: EndpointConfig, event: VerifiedEvent): string | undefined {
    return acceptanceRefusal(endpoint, event.eventType, event.source);
  }
}

function scopeOf(endpoint: EndpointConfig, event: VerifiedEvent): string {
  return sourceScopeOf(endpoint, event.namespace);
}

/** The identity's scope: the endpoint's tenant and provider (trusted config) and the event's namespace. */
export function sourceScopeOf(endpoint: EndpointConfig, namespace: string): string {
  return `${endpoint.tenantId}:${endpoint.provider}:${namespace}`;
}
