import { createHmac } from 'node:crypto';
import { EndpointConfig } from '../../config/app-config';
import { BadRequestError, UnauthorizedError } from '../../common/errors';
import { requireRecent, signingSecret } from '../hmac-signature';
import { HmacSettings, hmacSettingsSchema, isPointer, parseTemplate, resolvePointer, TemplatePart } from './hmac-scheme';
import { keyMaterial, SecretForm } from '../../ingestion/secret-form';
import {
  parseJsonObject,
  header,
  endpointNamespace,
  requireIdentifier,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

interface Scheme {
  settings: HmacSettings;
  /** What is signed, in order. */
  parts: TemplatePart[];
  /** The endpoint's secrets as HMAC keys, by label. */
  keys: Map<string, Buffer>;
  expectPointers: string[];
}

/**
 * A sender described by configuration (`"provider": "hmac"` with `settings`,
 * see docs/operations.md): which header holds the signature and how it is
 * written, what is signed, where the timestamp, id and type are. The rules of
 * every built-in provider hold: verify the exact bytes first, parse after;
 * constant-time comparison; a value from an unsigned header only where the
 * configuration says `"unsigned": true`.
 */
@WebhookProviderFor('hmac')
export class HmacProvider implements WebhookProvider {
  /** Not used: an hmac endpoint's `expect` keys are JSON pointers into the body, checked in configure(). */
  readonly expects = {};
  private readonly schemes = new Map<string, Scheme>();

  configure(endpoint: EndpointConfig): string[] {
    const parsed = hmacSettingsSchema.safeParse(endpoint.settings ?? {});
    if (!parsed.success) {
      return parsed.error.issues.map((issue) => `settings${issue.path.map((p) => `.${String(p)}`).join('')}: ${issue.message}`);
    }
    const settings = parsed.data;
    const { parts, problems } =
      settings.signed === 'body' ? { parts: [{ value: 'body' } as TemplatePart], problems: [] } : parseTemplate(settings.signed.template);
    const signs = (value: 'timestamp' | 'id') => parts.some((p) => 'value' in p && p.value === value);

    const ts = settings.timestamp;
    if (ts) {
      const sources = [ts.header, ts.inSignature, ts.pointer].filter((s) => s !== undefined).length;
      if (sources !== 1) problems.push('settings.timestamp: name exactly one of "header", "inSignature" or "pointer"');
      if (ts.inSignature && !settings.signature.pairs?.timestamp)
        problems.push('settings.timestamp.inSignature: needs settings.signature.pairs.timestamp');
      if ((ts.header || ts.inSignature) && !signs('timestamp')) {
        problems.push(
          'settings.timestamp: a timestamp outside the body must be in settings.signed.template as {timestamp}, or it proves nothing',
        );
      }
      if (ts.pointer && signs('timestamp'))
        problems.push('settings.signed.template: {timestamp} cannot come from the body it signs; use a header');
    } else if (signs('timestamp')) {
      problems.push('settings.signed.template: uses {timestamp} but settings.timestamp is not set');
    }
    if (signs('id') && !('header' in settings.eventId))
      problems.push('settings.signed.template: uses {id} but settings.eventId is not a header');
    if ('header' in settings.eventId && !signs('id') && !settings.eventId.unsigned) {
      problems.push(
        `settings.eventId: header "${settings.eventId.header}" is not signed; say "unsigned": true to use it anyway (a captured body could then be replayed under a new id)`,
      );
    }
    if ('header' in settings.eventType && !settings.eventType.unsigned) {
      problems.push(`settings.eventType: header "${settings.eventType.header}" is not signed; say "unsigned": true to use it anyway`);
    }

    const expectPointers = Object.keys(endpoint.expect ?? {});
    for (const key of expectPointers) {
      if (!isPointer(key)) problems.push(`expect.${key}: for provider hmac, expect keys are JSON pointers into the body (e.g. "/team_id")`);
    }

    const keys = new Map<string, Buffer>();
    for (const secret of endpoint.secrets) {
      const key = secretKey(secret.value, settings.secret);
      // The value is never echoed: only the label.
      if (!key)
        problems.push(
          `secrets "${secret.label}": not ${settings.secret.encoding}${settings.secret.prefix ? ` after the prefix "${settings.secret.prefix}"` : ''}`,
        );
      else keys.set(secret.label, key);
    }
    if (problems.length === 0) this.schemes.set(endpoint.id, { settings, parts, keys, expectPointers });
    return problems;
  }

  secretForm(endpoint: EndpointConfig): SecretForm {
    return this.scheme(endpoint).settings.secret;
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent {
    const scheme = this.scheme(endpoint);
    const { settings } = scheme;
    const { signatures, pairTimestamp } = readSignatureHeader(request, settings);

    let timestamp: string | undefined;
    if (settings.timestamp?.header) timestamp = header(request.headers, settings.timestamp.header);
    if (settings.timestamp?.inSignature) timestamp = pairTimestamp;
    if ((settings.timestamp?.header || settings.timestamp?.inSignature) && !validTimestamp(timestamp, settings.timestamp.format)) {
      throw new UnauthorizedError('invalid_timestamp', 'the signature timestamp is missing or malformed');
    }
    let signedId: string | undefined;
    if (scheme.parts.some((p) => 'value' in p && p.value === 'id') && 'header' in settings.eventId) {
      signedId = header(request.headers, settings.eventId.header);
      // The id is part of what is signed: without it nothing can be verified.
      if (signedId === undefined) throw new UnauthorizedError('missing_event_id', `${settings.eventId.header} header is missing`);
    }

    const secret = signingSecret(endpoint, now, signatures, (s) => {
      const mac = createHmac(settings.algorithm, scheme.keys.get(s.label)!);
      for (const part of scheme.parts) {
        if ('literal' in part) mac.update(part.literal);
        else mac.update(part.value === 'body' ? request.rawBody : part.value === 'id' ? signedId! : timestamp!);
      }
      return mac.digest();
    });

    const body = parseJsonObject(request.rawBody);
    if (settings.timestamp) {
      const value = settings.timestamp.pointer ? resolvePointer(body, settings.timestamp.pointer) : timestamp;
      const at = timestampMs(value, settings.timestamp.format);
      if (at === undefined) throw new UnauthorizedError('invalid_timestamp', 'the signed timestamp is missing or malformed');
      requireRecent(at, endpoint, now, 'the signature timestamp');
    }

    const value = (source: HmacSettings['eventId']) =>
      'header' in source ? header(request.headers, source.header) : identifierValue(resolvePointer(body, source.pointer));
    const id = value(settings.eventId);
    if (id === undefined) throw new BadRequestError('missing_event_id', 'the event id is missing');
    const source: Record<string, string | number | boolean | undefined> = {};
    for (const key of scheme.expectPointers) {
      const found = resolvePointer(body, key);
      source[key] = typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean' ? found : undefined;
    }
    return {
      eventId: requireIdentifier(id, 'invalid_event_id'),
      eventType: requireIdentifier(value(settings.eventType), 'invalid_event_type'),
      namespace: endpointNamespace(endpoint),
      verifiedWith: secret.label,
      source,
    };
  }

  private scheme(endpoint: EndpointConfig): Scheme {
    const scheme = this.schemes.get(endpoint.id);
    if (!scheme) throw new Error(`hmac endpoint "${endpoint.id}" was not configured`);
    return scheme;
  }
}

/** The key after the configured prefix, which unlike a built-in provider's must be there. */
function secretKey(value: string, form: HmacSettings['secret']): Buffer | undefined {
  if (form.prefix && !value.startsWith(form.prefix)) return undefined;
  return keyMaterial(value, form);
}

/** The signatures in the header (decoded) and, for `key=value` pairs, the timestamp among them. */
function readSignatureHeader(request: WebhookRequest, settings: HmacSettings): { signatures: Buffer[]; pairTimestamp?: string } {
  const { signature } = settings;
  const raw = header(request.headers, signature.header);
  if (!raw) throw new UnauthorizedError('missing_signature', `${signature.header} header is missing`);
  let entries = (signature.separator ? raw.split(signature.separator) : [raw]).map((e) => e.trim()).filter(Boolean);
  let pairTimestamp: string | undefined;
  if (signature.pairs) {
    const pairs = entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as const).filter(([k]) => k);
    pairTimestamp = pairs.find(([k]) => k === signature.pairs!.timestamp)?.[1];
    entries = pairs.filter(([k]) => k === signature.pairs!.signature).map(([, v]) => v);
  }
  if (signature.prefix) entries = entries.filter((e) => e.startsWith(signature.prefix!)).map((e) => e.slice(signature.prefix!.length));
  const shape = signature.encoding === 'hex' ? /^(?:[0-9a-fA-F]{2})+$/ : /^[A-Za-z0-9+/_-]+={0,2}$/;
  const signatures = entries.filter((e) => shape.test(e)).map((e) => Buffer.from(e, signature.encoding));
  if (signatures.length === 0)
    throw new UnauthorizedError('unsupported_signature_version', `no signature in ${signature.header} in the configured form`);
  return { signatures, pairTimestamp };
}

function validTimestamp(text: string | undefined, format: NonNullable<HmacSettings['timestamp']>['format']): boolean {
  return text !== undefined && timestampMs(text, format) !== undefined;
}

/** Milliseconds since the epoch, or undefined when `value` is not a timestamp in `format`. */
function timestampMs(value: unknown, format: NonNullable<HmacSettings['timestamp']>['format']): number | undefined {
  if (format === 'iso8601') {
    if (typeof value !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value)) return undefined;
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,15}$/.test(text)) return undefined;
  return format === 'unix-seconds' ? Number(text) * 1000 : Number(text);
}

/** Ids may be JSON strings or integers (written as their decimal digits). */
function identifierValue(value: unknown): unknown {
  return typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
}
