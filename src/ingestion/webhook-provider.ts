import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import type { EndpointConfig, EndpointSecret } from '../config/app-config';
import { BadRequestError } from '../common/errors';
import type { SecretForm } from './secret-form';

export interface WebhookRequest {
  /** Lower-cased header names, as Node gives them. */
  headers: IncomingHttpHeaders;
  /** The exact bytes received: never re-serialised before verification. */
  rawBody: Buffer;
  /** `POST`, or `GET` for a provider that answers GET challenges (see `answersGet`). Absent: POST. */
  method?: string;
  /** The path and query as received (`/webhooks/x?a=1`), for senders that sign the URL or send a challenge in the query. */
  url?: string;
}

/** An answer other than the JSON default: a status and, unless 204, a text/plain body (Adyen's `[accepted]`, an echoed challenge). */
export interface PlainAnswer {
  status: 200 | 204;
  text?: string;
}

export interface VerifiedEvent {
  eventId: string;
  eventType: string;
  /** The event-id namespace inside the tenant and provider, from trusted config or signed content only. */
  namespace: string;
  /** Label of the endpoint secret that verified the signature. */
  verifiedWith: string;
  /** Facts about the sender, compared with the endpoint's `expect`. */
  source: Readonly<Record<string, string | boolean | number | undefined>>;
  /**
   * The stored JSON form when the body is not JSON (a form-encoded body as an
   * object of its fields); absent: the body's own text is stored. The digest is
   * of the bytes received either way.
   */
  payload?: Readonly<Record<string, unknown>>;
  /** What the sender expects as the answer to an event it delivered (accepted, duplicate or ignored); absent: the JSON result. */
  answer?: PlainAnswer;
  /**
   * When the sender says the event happened, read from the same place as the id and the
   * same in every delivery of it and in its API copy (Stripe's `created`). It leads the
   * event's identity key, so the dedup index takes inserts at its recent end instead of
   * anywhere in a month of ids (docs/performance.md, "At month scale"). Undefined when the
   * sender states no such time: the key is the id alone, as before.
   */
  occurredAt?: Date;
}

/**
 * A verified request that is not an event but the sender checking the endpoint
 * (Slack's `url_verification`, Zoom's `endpoint.url_validation`): answered with
 * `reply` as JSON, stored nowhere. Return it only after the signature and the
 * timestamp verified, so the endpoint never echoes anything to a stranger.
 */
export interface HandshakeReply {
  handshake: Readonly<Record<string, unknown>>;
  /** Instead of `handshake` as JSON: a plain answer (an echoed challenge, a 204). */
  answer?: PlainAnswer;
  /** Label of the endpoint secret that verified the signature (or the challenge's token). */
  verifiedWith: string;
}

export function isHandshake(verified: VerifiedEvent | HandshakeReply): verified is HandshakeReply {
  return 'handshake' in verified;
}

/**
 * One webhook provider: verifies a request against an endpoint's secrets and
 * extracts the event's identity. Throw UnauthorizedError for a bad or stale
 * signature and BadRequestError for content that is malformed after verification.
 */
export interface WebhookProvider {
  /** The `expect` keys this provider reports in `source`, with their JSON type; others are refused at start. */
  readonly expects: Readonly<Record<string, 'string' | 'boolean'>>;
  /**
   * The body's JSON paths the acceptance reads (identity, type, source facts): an
   * endpoint's `omit` may not drop them. Undefined: the whole body, so nothing may be omitted.
   */
  readonly reads?: readonly string[];
  /**
   * Optional: checks an endpoint's `settings` and `expect` at start and keeps
   * what it needs; returns one line per mistake. Without it, `settings` is refused
   * and `expect` is checked against `expects`.
   */
  configure?(endpoint: EndpointConfig): string[];
  /** Optional: the endpoint verifies without a configured secret (a key the request points to, on an allowed host). */
  keyless?(endpoint: EndpointConfig): boolean;
  /**
   * Where a secret's key material is (after a public prefix such as `whsec_`, in
   * which encoding): every secret is checked at start for MIN_KEY_BYTES of it.
   * Called after configure() accepted the endpoint.
   */
  secretForm(endpoint: EndpointConfig): SecretForm;
  /** A promise only where verification needs I/O (a signing certificate fetched once, then cached). */
  verify(
    request: WebhookRequest,
    endpoint: EndpointConfig,
    now: Date,
  ): VerifiedEvent | HandshakeReply | Promise<VerifiedEvent | HandshakeReply>;
  /**
   * Optional: whether the endpoint answers `GET /webhooks/:id` (a subscription
   * challenge, as Meta sends); without it a GET falls through to the app's 404.
   */
  answersGet?(endpoint: EndpointConfig): boolean;
  /**
   * Identifies an event read from the provider's API with the endpoint's key over
   * TLS (reconciliation): the same identity and source facts a webhook of it would
   * give, `verifiedWith = 'api'`. Absent: the provider's events are not reconciled.
   */
  fromApi?(event: unknown): VerifiedEvent;
  /**
   * True when `namespace` comes from the event alone, not from the endpoint (Stripe: the account
   * and mode), so two endpoints of one tenant that both receive an event store it once. The first
   * copy decides, except that a copy its own endpoint takes over-rules a row another endpoint
   * stored `ignored` (for its type or its `expect`): each endpoint's own copy counts, whichever
   * arrives first.
   */
  readonly namespaceSpansEndpoints?: boolean;
  /**
   * Optional: namespaces an earlier version stored this endpoint's events under, besides
   * `namespace`. An event found under one of them is a duplicate, not a new event: a resend
   * that straddles the change is not accepted twice. Checked by one index probe per webhook.
   */
  formerNamespaces?(endpoint: EndpointConfig): string[];
}

export const WEBHOOK_PROVIDER_NAME = 'webhook-inbox:provider-name';

/** Registers a class as the provider named in the endpoints file's `provider` field. */
export const WebhookProviderFor = (name: string) => applyDecorators(Injectable(), SetMetadata(WEBHOOK_PROVIDER_NAME, name));

/** Secrets that may still verify at `now`: a rotated-out secret stops after its `notAfter`. */
export function liveSecrets(endpoint: EndpointConfig, now: Date): EndpointSecret[] {
  return endpoint.secrets.filter((s) => !s.notAfter || now.getTime() <= s.notAfter.getTime());
}

/** The namespace of an endpoint's own: its events' ids are unique within the endpoint. */
export function endpointNamespace(endpoint: EndpointConfig): string {
  return `endpoint-${endpoint.id}`;
}

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  // Node's headers object inherits Object's: a configured name such as "constructor" must not find a function.
  const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
  return Array.isArray(value) ? value[0] : value;
}

const PRINTABLE_ID = /^[\x21-\x7e]{1,255}$/;

/** An event id or type: a string of 1-255 printable ASCII characters. */
export function requireIdentifier(value: unknown, reason: string): string {
  if (typeof value !== 'string' || !PRINTABLE_ID.test(value)) {
    throw new BadRequestError(reason, `${reason.replace(/_/g, ' ')}: expected 1-255 printable characters`);
  }
  return value;
}

/** A stated time in whole Unix seconds (Stripe's `created`, Slack's `event_time`), or undefined when it is not one. */
export function unixSecondsTime(value: unknown): Date | undefined {
  return Number.isSafeInteger(value) && (value as number) > 0 ? new Date((value as number) * 1000) : undefined;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body as text when its bytes are valid UTF-8 (a BOM kept as U+FEFF), else undefined. */
export function utf8Text(body: Buffer): string | undefined {
  try {
    return strictUtf8.decode(body);
  } catch {
    return undefined;
  }
}

/** Parses the verified body as a JSON object. */
/**
 * The id and type of a sender that puts them in headers (GitHub, Shopify), for a body that
 * must be a JSON object: 400 `missing_event_id` without the id (the first of `idHeaders`
 * present), `invalid_event_id` / `invalid_event_type` for a bad one, and the body's own 400s.
 */
export function headerIdentity(
  request: WebhookRequest,
  idHeaders: readonly string[],
  typeHeader: string,
): { eventId: string; eventType: string } {
  const id = idHeaders.map((name) => header(request.headers, name)).find((value) => value !== undefined);
  if (id === undefined) throw new BadRequestError('missing_event_id', `${idHeaders[0]} header is missing`);
  const eventId = requireIdentifier(id, 'invalid_event_id');
  const eventType = requireIdentifier(header(request.headers, typeHeader), 'invalid_event_type');
  parseJsonObject(request.rawBody);
  return { eventId, eventType };
}

export function parseJsonObject(rawBody: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new BadRequestError('malformed_json', 'body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadRequestError('malformed_json', 'body is not a JSON object');
  }
  return value as Record<string, unknown>;
}
