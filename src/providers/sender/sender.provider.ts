import { createHash, createHmac, createPublicKey, KeyObject, verify as verifySignature, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { EndpointConfig, EndpointSecret } from '../../config/app-config';
import { BadRequestError, UnauthorizedError } from '../../common/errors';
import { requireRecent, safeEqual } from '../hmac-signature';
import { resolvePointer } from '../hmac/hmac-scheme';
import { keyMaterial, SecretForm } from '../../ingestion/secret-form';
import {
  parseJsonObject,
  HandshakeReply,
  header,
  liveSecrets,
  endpointNamespace,
  requireIdentifier,
  utf8Text,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';
import { CertificateCache, CertificateSource } from './certificate-cache';
import { withPreset } from './sender-presets';
import { Handshake, parseSenderTemplate, Part, SenderSettings, senderSettingsSchema } from './sender-scheme';

type Hash = SenderSettings['key']['hash'];

interface Scheme {
  settings: SenderSettings;
  signed: Part[];
  eventId: Part[];
  eventType: Part[];
  /** Each handshake's reply templates, in the order of `settings.handshakes`. */
  replies: { handshake: Handshake; json?: Record<string, Part[]>; text?: Part[] }[];
  /** HMAC keys or public keys, by secret label (the verify-token secrets excluded). */
  hmacKeys: Map<string, Buffer>;
  publicKeys: Map<string, KeyObject>;
  certificate?: CertificateSource;
  expectPointers: string[];
}

/** What one request gives the templates. */
interface Request {
  request: WebhookRequest;
  query: URLSearchParams;
  /** The parsed body: a JSON value, or a form's fields (a repeated field as an array). */
  body?: unknown;
  timestamp?: string;
}

const CERTIFICATE_LABEL = 'certificate';

/**
 * Any sender described by configuration (`"provider": "sender"`, usually with a
 * preset of config/senders/): HMAC or public-key signatures (Ed25519, ECDSA P-256,
 * RSA with a configured key or a certificate the request points to), over signed
 * content assembled from the body, headers, the configured URL, sorted form
 * fields or named body fields; form bodies stored as JSON; handshakes answered
 * without a row; ids from templates. The rules of the built-in providers hold:
 * nothing read from the request counts before the signature verified, except a
 * query challenge the endpoint expects; comparisons are constant-time; what is
 * read unsigned is said so in the configuration.
 */
@WebhookProviderFor('sender')
export class SenderProvider implements WebhookProvider {
  /** Not used: `expect` keys are JSON pointers into the body, checked in configure(). */
  readonly expects = {};
  private readonly schemes = new Map<string, Scheme>();
  private readonly certificates = new CertificateCache();

  configure(endpoint: EndpointConfig): string[] {
    const merged = withPreset(endpoint.settings ?? {});
    if (merged.problem) return [merged.problem];
    const parsed = senderSettingsSchema.safeParse(merged.settings);
    if (!parsed.success) {
      return parsed.error.issues.map((issue) => `settings${issue.path.map((p) => `.${String(p)}`).join('')}: ${issue.message}`);
    }
    const settings = parsed.data;
    const problems: string[] = [];
    const template = (where: string, text: string) => {
      const { parts, problems: found } = parseSenderTemplate(text);
      problems.push(...found.map((p) => `settings.${where}: ${p}`));
      return parts;
    };
    const signed = template('signed', settings.signed);
    const eventId = template('eventId', settings.eventId);
    const eventType = template('eventType', settings.eventType);
    const replies = settings.handshakes.map((handshake, i) => {
      const reply = handshake.reply;
      if ('json' in reply)
        return {
          handshake,
          json: Object.fromEntries(Object.entries(reply.json).map(([k, v]) => [k, template(`handshakes.${i}.reply.json.${k}`, v)])),
        };
      if ('text' in reply) return { handshake, text: template(`handshakes.${i}.reply.text`, reply.text) };
      return { handshake };
    });

    const kinds = (parts: Part[]) => new Set<string>(parts.map((p) => ('kind' in p ? p.kind : 'literal')));
    const signedKinds = kinds(signed);
    for (const kind of ['digest', 'each', 'hmac-hex', 'query']) {
      if (signedKinds.has(kind)) problems.push(`settings.signed: {${kind}} cannot be part of what is signed`);
    }
    // A token proves who sent the request, not what it says: nothing of it is signed.
    const isToken = settings.key.type === 'token';
    const bodySigned = !isToken && (signedKinds.has('body') || signedKinds.has('form'));
    if (signedKinds.has('form') && settings.body !== 'form') problems.push('settings.signed: {form} needs "body": "form"');
    if (signedKinds.has('url') && !settings.publicUrl)
      problems.push('settings.publicUrl: the sender signs the URL: give it as configured at the sender');
    const templates: [string, Part[]][] = [
      ['signed', signed],
      ['eventId', eventId],
      ['eventType', eventType],
      ...replies.flatMap((r, i): [string, Part[]][] =>
        [...Object.values(r.json ?? {}), r.text ?? []].map((parts) => [`handshakes.${i}.reply`, parts]),
      ),
    ];
    for (const [where, parts] of templates) {
      for (const part of parts) {
        // Own keys only: {setting:constructor} found Object's, passed the start, and made every request a 500.
        if ('kind' in part && part.kind === 'setting' && !Object.hasOwn(settings.values, part.name))
          problems.push(`settings.values.${part.name}: used in settings.${where} but not set`);
      }
    }
    const signedParts = isToken ? [] : signed;
    const signedHeaders = new Set(signedParts.flatMap((p) => ('kind' in p && p.kind === 'header' ? [p.name] : [])));
    const signedPointers = new Set(signedParts.flatMap((p) => ('kind' in p && p.kind === 'pointer' ? [p.pointer] : [])));
    for (const part of signedParts) if ('kind' in part && part.kind === 'keyLines') part.names.forEach((n) => signedPointers.add(`/${n}`));
    // Every event stores its whole body: what the signature leaves out is the request's to choose (an amount beside
    // a signed id), so a body not signed whole must be said.
    if (!bodySigned && !settings.unsignedBody)
      problems.push(
        signedPointers.size === 0
          ? 'settings.signed: covers no part of the body; say "unsignedBody": true to accept bodies nothing signs'
          : 'settings.signed: covers some fields of the body, which is stored whole; say "unsignedBody": true to accept the fields nothing signs',
      );
    // Ids, timestamps, handshakes and `expect` read the whole body, while with `items` what is signed is each item's:
    // a body pointer is signed only where it names a signed field through an item (Adyen's /notificationItems/0/...).
    const isSignedField = (pointer: string): boolean => {
      if (bodySigned) return true;
      const field = settings.items ? fieldOfItem(pointer, settings.items) : pointer;
      return field !== undefined && signedPointers.has(field);
    };
    // A handshake recognised by what the sender signed: never by the query, an unsigned header or an unsigned field.
    const whenSigned = (when: SenderSettings['handshakes'][number]['when']): boolean =>
      'pointer' in when ? isSignedField(when.pointer) : 'header' in when ? signedHeaders.has(when.header) : false;
    if (isToken && settings.timestamp) problems.push('settings.timestamp: a token signs nothing, so no timestamp can be trusted');
    if (isToken !== (settings.signature.encoding === 'text'))
      problems.push('settings.signature.encoding: "text" goes with "key": {"type": "token"}, and only with it');

    const { signature, timestamp: ts } = settings;
    if ((signature.header === undefined) === (signature.pointer === undefined))
      problems.push('settings.signature: name exactly one of "header" or "pointer"');
    if (ts) {
      const sources = [ts.header, ts.inSignature, ts.pointer].filter((s) => s !== undefined).length;
      if (sources !== 1) problems.push('settings.timestamp: name exactly one of "header", "inSignature" or "pointer"');
      if (ts.inSignature && !signature.pairs?.timestamp)
        problems.push('settings.timestamp.inSignature: needs settings.signature.pairs.timestamp');
      if ((ts.header || ts.inSignature) && !signedKinds.has('timestamp'))
        problems.push('settings.timestamp: a timestamp outside the body must be in settings.signed as {timestamp}, or it proves nothing');
      if (ts.pointer && !isSignedField(ts.pointer))
        problems.push('settings.timestamp.pointer: the field is not signed (put it in settings.signed)');
      // {timestamp} is the header's or the signature's; a body field would be signed as an empty string.
      if (ts.pointer && signedKinds.has('timestamp'))
        problems.push(`settings.signed: {timestamp} has no value when the timestamp is a body field: sign {${ts.pointer}}`);
    } else if (signedKinds.has('timestamp')) problems.push('settings.signed: uses {timestamp} but settings.timestamp is not set');

    const unsignedHeaders = new Set(settings.unsignedHeaders);
    const readsUnsigned = (where: string, parts: Part[]) => {
      for (const part of parts) {
        if (!('kind' in part)) continue;
        if (part.kind === 'header' && !signedHeaders.has(part.name) && !unsignedHeaders.has(part.name))
          problems.push(`settings.${where}: header "${part.name}" is not signed; list it in settings.unsignedHeaders to use it anyway`);
        if (part.kind === 'pointer' && !isSignedField(part.pointer) && !settings.unsignedBody)
          problems.push(`settings.${where}: ${part.pointer} is not signed; say "unsignedBody": true to read it anyway`);
        // Whole-body reads: signed fields do not cover what else the body holds (a digest over it changes with every unsigned byte).
        if ((part.kind === 'digest' || part.kind === 'each') && !bodySigned && !settings.unsignedBody) {
          const placeholder = part.kind === 'each' ? `{each:${part.pointer}}` : '{digest}';
          problems.push(
            `settings.${where}: ${placeholder} reads the whole body, which is not signed; say "unsignedBody": true to read it anyway`,
          );
        }
        if (part.kind === 'hmac-hex' && settings.key.type !== 'hmac') problems.push(`settings.${where}: {hmac-hex:...} needs an hmac key`);
      }
    };
    readsUnsigned('eventId', eventId);
    readsUnsigned('eventType', eventType);
    for (const [where, parts] of [
      ['eventId', eventId],
      ['eventType', eventType],
    ] as const) {
      for (const part of parts) {
        // The query is never signed: one signed body would be stored again under every fresh value of it.
        if ('kind' in part && part.kind === 'query')
          problems.push(`settings.${where}: {query:${part.name}} is never signed; it may be used in handshake replies only`);
        if ('kind' in part && part.kind === 'hmac-hex')
          problems.push(`settings.${where}: {hmac-hex:${part.pointer}} may be used in handshake replies only`);
        // Placeholders with no value in an id or a type: every event would be 400 missing_event_id.
        if ('kind' in part && (NO_VALUE_IN_IDS.has(part.kind) || (part.kind === 'url' && !settings.publicUrl)))
          problems.push(`settings.${where}: {${part.kind}} has no value here`);
        if ('kind' in part && part.kind === 'timestamp' && settings.timestamp?.pointer)
          problems.push(
            `settings.${where}: {timestamp} has no value when the timestamp is a body field: use {${settings.timestamp.pointer}}`,
          );
      }
    }
    replies.forEach((r, i) =>
      [...Object.values(r.json ?? {}), r.text ?? []].forEach((parts) => {
        readsUnsigned(`handshakes.${i}.reply`, parts);
        for (const part of parts) {
          // An HMAC with the events' key over what the request chose would sign any event (a signing oracle): only over
          // a field the sender signed (Zoom's plainToken), whatever unsignedBody says; a query challenge verifies nothing.
          if ('kind' in part && part.kind === 'hmac-hex' && (!whenSigned(r.handshake.when) || !isSignedField(part.pointer)))
            problems.push(
              `settings.handshakes.${i}.reply: {hmac-hex:${part.pointer}} may only HMAC a signed field, in a handshake recognised by a signed field or header`,
            );
        }
      }),
    );

    // An id that reads nothing of the request is every event's: all but the first would be taken for duplicates.
    const readsRequest = eventId.some((p) => 'kind' in p && ['pointer', 'each', 'digest', 'header', 'timestamp'].includes(p.kind));
    if (!readsRequest)
      problems.push('settings.eventId: reads nothing of the request (a body field, a header, {digest}, {each:...} or {timestamp})');

    const expectPointers = Object.keys(endpoint.expect ?? {});
    for (const key of expectPointers) {
      if (!key.startsWith('/'))
        problems.push(`expect.${key}: for provider sender, expect keys are JSON pointers into the body (e.g. "/TopicArn")`);
      else if (!isSignedField(key) && !settings.unsignedBody) problems.push(`expect.${key}: the field is not signed`);
    }

    const tokenLabels = new Set(settings.handshakes.flatMap((h) => (h.verifyToken ? [h.verifyToken.secret] : [])));
    for (const [i, h] of settings.handshakes.entries()) {
      if (h.method === 'GET' && !('query' in h.when))
        problems.push(`settings.handshakes.${i}: a GET handshake is recognised by a query parameter`);
      // What recognises a handshake is read like an id: unsigned, it would turn a captured event into a handshake.
      if ('pointer' in h.when && !isSignedField(h.when.pointer) && !settings.unsignedBody)
        problems.push(`settings.handshakes.${i}.when: ${h.when.pointer} is not signed; say "unsignedBody": true to read it anyway`);
      if ('header' in h.when && !signedHeaders.has(h.when.header) && !unsignedHeaders.has(h.when.header))
        problems.push(
          `settings.handshakes.${i}.when: header "${h.when.header}" is not signed; list it in settings.unsignedHeaders to use it anyway`,
        );
      if (h.verifyToken && !endpoint.secrets.some((s) => s.label === h.verifyToken!.secret))
        problems.push(`settings.handshakes.${i}.verifyToken.secret: no secret labelled "${h.verifyToken.secret}"`);
    }

    const { key } = settings;
    const hmacKeys = new Map<string, Buffer>();
    const publicKeys = new Map<string, KeyObject>();
    let certificate: CertificateSource | undefined;
    if (key.certificate) {
      if (key.type !== 'rsa') problems.push('settings.key.certificate: only for "type": "rsa"');
      try {
        certificate = {
          // In full, as documented: unanchored, `sns\.us-east-1\.amazonaws\.com` also matched `sns.us-east-1.amazonaws.com.attacker.example`.
          // Each compiled alone first: `a)|(.*` would otherwise close the group and match any host.
          hosts: key.certificate.hosts.map((h) => (new RegExp(h), new RegExp(`^(?:${h})$`))),
          path: key.certificate.path ? new RegExp(key.certificate.path) : undefined,
          ca: key.certificate.caFile ? readFileSync(key.certificate.caFile, 'utf8') : undefined,
        };
      } catch (error) {
        problems.push(`settings.key.certificate: ${(error as Error).message}`);
      }
      // TLS would ignore it silently, failing every fetch it was meant for; its content is never echoed.
      if (certificate?.ca !== undefined && !isPemCertificate(certificate.ca))
        problems.push('settings.key.certificate.caFile: not a PEM certificate file');
    }
    for (const secret of endpoint.secrets) {
      if (tokenLabels.has(secret.label)) continue;
      if (key.certificate) {
        problems.push(`secrets "${secret.label}": the key comes from the sender's certificate; only a verify token may be listed`);
      } else if (key.type === 'hmac' || key.type === 'token') {
        const material = key.prefix && !secret.value.startsWith(key.prefix) ? undefined : keyMaterial(secret.value, key);
        if (!material)
          problems.push(`secrets "${secret.label}": not ${key.encoding}${key.prefix ? ` after the prefix "${key.prefix}"` : ''}`);
        else hmacKeys.set(secret.label, material);
      } else {
        const publicKey = parsePublicKey(secret.value, key.type);
        if (!publicKey)
          problems.push(
            `secrets "${secret.label}": not a ${key.type} public key (PEM, base64 DER${key.type === 'ed25519' ? ', or 64 hex digits' : ''})`,
          );
        else publicKeys.set(secret.label, publicKey);
      }
    }
    if (!key.certificate && hmacKeys.size + publicKeys.size === 0 && problems.length === 0)
      problems.push('secrets: no signing key is listed');

    if (problems.length === 0) {
      this.schemes.set(endpoint.id, { settings, signed, eventId, eventType, replies, hmacKeys, publicKeys, certificate, expectPointers });
    }
    return problems;
  }

  /** A certificate-based endpoint may list no secret at all. */
  keyless(endpoint: EndpointConfig): boolean {
    return this.schemes.get(endpoint.id)?.certificate !== undefined;
  }

  secretForm(endpoint: EndpointConfig): SecretForm {
    const { key } = this.scheme(endpoint).settings;
    // Public keys, shared tokens and verify tokens are checked as text: each needs 16 bytes like any secret.
    return key.type === 'hmac' ? { encoding: key.encoding, prefix: key.prefix } : { encoding: 'utf8' };
  }

  answersGet(endpoint: EndpointConfig): boolean {
    return this.scheme(endpoint).settings.handshakes.some((h) => h.method === 'GET');
  }

  verify(
    request: WebhookRequest,
    endpoint: EndpointConfig,
    now: Date,
  ): VerifiedEvent | HandshakeReply | Promise<VerifiedEvent | HandshakeReply> {
    const scheme = this.scheme(endpoint);
    const { settings } = scheme;
    const req: Request = { request, query: queryOf(request.url) };
    const method = request.method ?? 'POST';

    // A challenge in the query has no body to verify: answered only as the endpoint's configuration expects it.
    for (const reply of scheme.replies) {
      const { when } = reply.handshake;
      if (reply.handshake.method !== method || !('query' in when)) continue;
      const value = req.query.get(when.query);
      if (value === null || (when.equals !== undefined && value !== when.equals)) continue;
      const label = this.checkVerifyToken(reply.handshake, req, endpoint, now);
      return this.reply(reply, req, scheme, label);
    }
    if (method !== 'POST') throw new BadRequestError('invalid_challenge', 'not a challenge this endpoint expects');

    const signatureHeader = settings.signature.header ? readSignatureHeader(request, settings) : undefined;
    if (settings.timestamp?.header || settings.timestamp?.inSignature) {
      req.timestamp = settings.timestamp.header ? header(request.headers, settings.timestamp.header) : signatureHeader?.pairTimestamp;
      if (timestampMs(req.timestamp, settings.timestamp.format) === undefined)
        throw new UnauthorizedError('invalid_timestamp', 'the signature timestamp is missing or malformed');
    }
    for (const part of scheme.signed) {
      // A signed header the request lacks: nothing can be verified (the id of Twitch or PayPal).
      if ('kind' in part && part.kind === 'header' && header(request.headers, part.name) === undefined) {
        const isId = scheme.eventId.some((p) => 'kind' in p && p.kind === 'header' && p.name === part.name);
        throw new UnauthorizedError(isId ? 'missing_event_id' : 'missing_signed_header', `${part.name} header is missing`);
      }
    }
    // Fields are signed (Mailgun, Adyen, SNS) or the body is a form: it is read before verification, as the sender's own code does.
    const readsFields =
      settings.body === 'form' ||
      settings.signature.pointer !== undefined ||
      settings.key.hashBy !== undefined ||
      settings.items !== undefined ||
      (settings.key.certificate !== undefined && 'pointer' in settings.key.certificate.url) ||
      scheme.signed.some((p) => 'kind' in p && (p.kind === 'pointer' || p.kind === 'keyLines'));
    if (readsFields) req.body = parseBody(request.rawBody, settings.body);

    const contexts = this.signingContexts(req, settings);
    const hash = hashOf(req, settings);
    if (scheme.certificate) {
      return this.certificateKey(req, settings, scheme.certificate, now).then((key) => {
        for (const context of contexts) {
          const data = this.signedBytes(scheme, req, context);
          if (!publicKeyVerifies(hash, data, key, context.signatures))
            throw new UnauthorizedError('invalid_signature', 'the signature does not verify with the sender certificate');
        }
        return this.identify(scheme, req, endpoint, now, CERTIFICATE_LABEL);
      });
    }
    let label: string | undefined;
    for (const context of contexts) {
      const data = this.signedBytes(scheme, req, context);
      const secret = liveSecrets(endpoint, now).find((s) => this.verifies(scheme, s, hash, data, context.signatures));
      if (!secret) throw new UnauthorizedError('invalid_signature', 'no configured key verifies the signature');
      label ??= secret.label;
    }
    return this.identify(scheme, req, endpoint, now, label!);
  }

  private verifies(scheme: Scheme, secret: EndpointSecret, hash: Hash, data: Buffer, signatures: Buffer[]): boolean {
    const hmacKey = scheme.hmacKeys.get(secret.label);
    if (hmacKey && scheme.settings.key.type === 'token') {
      // Digests first: equal lengths, so the comparison tells nothing about the token's length.
      const expected = createHash('sha256').update(hmacKey).digest();
      return signatures.some((s) => safeEqual(expected, createHash('sha256').update(s).digest()));
    }
    if (hmacKey) {
      const expected = createHmac(hash, hmacKey).update(data).digest();
      return signatures.some((s) => safeEqual(expected, s));
    }
    const publicKey = scheme.publicKeys.get(secret.label);
    if (!publicKey) return false;
    return publicKeyVerifies(scheme.settings.key.type === 'ed25519' ? null : hash, data, publicKey, signatures);
  }

  /** After verification: the timestamp's age, a handshake's reply, or the event's identity. */
  private identify(scheme: Scheme, req: Request, endpoint: EndpointConfig, now: Date, label: string): VerifiedEvent | HandshakeReply {
    const { settings } = scheme;
    req.body ??= parseBody(req.request.rawBody, settings.body);
    if (settings.timestamp) {
      const { pointer, format } = settings.timestamp;
      // With items, one named through an item is every item's: a stale signed item appended to a fresh one is refused too.
      const field = pointer && settings.items ? fieldOfItem(pointer, settings.items) : undefined;
      const values =
        field !== undefined
          ? this.items(req, settings).map((item) => resolvePointer(item, field))
          : [pointer ? resolvePointer(req.body, pointer) : req.timestamp];
      for (const value of values) {
        const at = timestampMs(value, format);
        if (at === undefined) throw new UnauthorizedError('invalid_timestamp', 'the signed timestamp is missing or malformed');
        requireRecent(at, endpoint, now, 'the signature timestamp');
      }
    }
    for (const reply of scheme.replies) {
      const { when } = reply.handshake;
      if ('query' in when) continue;
      const found = 'pointer' in when ? resolvePointer(req.body, when.pointer) : header(req.request.headers, when.header);
      if (found === when.equals) return this.reply(reply, req, scheme, label);
    }
    const id = this.render(scheme.eventId, req, scheme, label);
    if (id === undefined) throw new BadRequestError('missing_event_id', 'the event id is missing');
    const source: Record<string, string | number | boolean | undefined> = {};
    for (const key of scheme.expectPointers) {
      const found = resolvePointer(req.body, key);
      source[key] = typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean' ? found : undefined;
    }
    return {
      eventId: requireIdentifier(id, 'invalid_event_id'),
      eventType: requireIdentifier(this.render(scheme.eventType, req, scheme, label), 'invalid_event_type'),
      namespace: endpointNamespace(endpoint),
      verifiedWith: label,
      source,
      ...(settings.body === 'form' ? { payload: req.body as Record<string, unknown> } : {}),
      ...(settings.answer ? { answer: settings.answer } : {}),
    };
  }

  private reply(reply: Scheme['replies'][number], req: Request, scheme: Scheme, label: string): HandshakeReply {
    const value = (parts: Part[]) => {
      const text = this.render(parts, req, scheme, label);
      // What is echoed is bounded printable ASCII (Graph's tokens have spaces): never a long string or control bytes.
      if (text === undefined || !/^[\x20-\x7e]{1,1024}$/.test(text))
        throw new BadRequestError('invalid_challenge', 'the challenge is missing or not 1-1024 printable characters');
      return text;
    };
    if (reply.json) {
      return { handshake: Object.fromEntries(Object.entries(reply.json).map(([k, parts]) => [k, value(parts)])), verifiedWith: label };
    }
    if (reply.text) return { handshake: {}, answer: { status: 200, text: value(reply.text) }, verifiedWith: label };
    return { handshake: {}, answer: { status: 204 }, verifiedWith: label };
  }

  /** The label of the verify token the challenge carries; 401 when it is not the configured one. */
  private checkVerifyToken(handshake: Handshake, req: Request, endpoint: EndpointConfig, now: Date): string {
    if (!handshake.verifyToken) return 'challenge';
    const given = Buffer.from(req.query.get(handshake.verifyToken.query) ?? '');
    const secret = liveSecrets(endpoint, now).find(
      (s) =>
        s.label === handshake.verifyToken!.secret &&
        safeEqual(createHash('sha256').update(s.value).digest(), createHash('sha256').update(given).digest()),
    );
    if (!secret) throw new UnauthorizedError('invalid_verify_token', 'the challenge does not carry the configured verify token');
    return secret.label;
  }

  /** The body's signed items (each `items.each` of them), or the body itself when it is signed whole. */
  private items(req: Request, settings: SenderSettings): unknown[] {
    if (!settings.items) return [req.body];
    const list = resolvePointer(req.body, settings.items.pointer);
    if (!Array.isArray(list) || list.length === 0) throw new UnauthorizedError('missing_signature', 'no signed items in the body');
    return list.map((element) => (settings.items!.each ? resolvePointer(element, settings.items!.each) : element));
  }

  /** The body (or each of its items) with the signatures it carries. */
  private signingContexts(req: Request, settings: SenderSettings): { item: unknown; signatures: Buffer[] }[] {
    const items = this.items(req, settings);
    const fromHeader = settings.signature.header ? readSignatureHeader(req.request, settings).signatures : undefined;
    return items.map((item) => ({ item, signatures: fromHeader ?? readSignatureField(item, settings) }));
  }

  private signedBytes(scheme: Scheme, req: Request, context: { item: unknown }): Buffer {
    const chunks: Buffer[] = [];
    const { settings } = scheme;
    for (const part of scheme.signed) {
      if ('literal' in part) chunks.push(Buffer.from(part.literal));
      else if (part.kind === 'body') chunks.push(req.request.rawBody);
      else if (part.kind === 'form') chunks.push(Buffer.from(sortedForm(req.body as Record<string, unknown>)));
      else if (part.kind === 'crc32') chunks.push(Buffer.from(String(crc32(req.request.rawBody))));
      else if (part.kind === 'keyLines') {
        for (const name of part.names) {
          const value = fieldText(resolvePointer(context.item, `/${name}`));
          if (value !== undefined) chunks.push(Buffer.from(`${name}\n${value}\n`));
        }
      } else if (part.kind === 'pointer') chunks.push(Buffer.from(fieldText(resolvePointer(context.item, part.pointer)) ?? ''));
      else chunks.push(Buffer.from(this.simpleValue(part, req, settings) ?? ''));
    }
    return Buffer.concat(chunks);
  }

  private simpleValue(part: Part, req: Request, settings: SenderSettings): string | undefined {
    if (!('kind' in part)) return part.literal;
    switch (part.kind) {
      case 'timestamp':
        return req.timestamp;
      case 'url':
        return settings.publicUrl;
      case 'method':
        return req.request.method ?? 'POST';
      case 'header':
        return header(req.request.headers, part.name);
      case 'setting':
        return Object.hasOwn(settings.values, part.name) ? settings.values[part.name] : undefined;
      case 'query':
        return req.query.get(part.name) ?? undefined;
      default:
        return undefined;
    }
  }

  /** A template of the id, type or a reply, over the verified request; undefined when a value it names is missing. */
  private render(parts: Part[], req: Request, scheme: Scheme, label: string): string | undefined {
    let text = '';
    for (const part of parts) {
      let value: string | undefined;
      if ('literal' in part) value = part.literal;
      else if (part.kind === 'pointer') value = fieldText(resolvePointer(req.body, part.pointer));
      else if (part.kind === 'digest') value = createHash('sha256').update(req.request.rawBody).digest('hex');
      else if (part.kind === 'each') value = eachDigest(req.body, part.pointer);
      else if (part.kind === 'hmac-hex') {
        const field = fieldText(resolvePointer(req.body, part.pointer));
        const key = scheme.hmacKeys.get(label);
        value = field !== undefined && key ? createHmac(scheme.settings.key.hash, key).update(field).digest('hex') : undefined;
      } else value = this.simpleValue(part, req, scheme.settings);
      if (value === undefined || value === '') return undefined;
      text += value;
    }
    return text;
  }

  private async certificateKey(req: Request, settings: SenderSettings, source: CertificateSource, now: Date): Promise<KeyObject> {
    const where = settings.key.certificate!.url;
    const url = 'header' in where ? header(req.request.headers, where.header) : fieldText(resolvePointer(req.body, where.pointer));
    if (!url) throw new UnauthorizedError('missing_signature', 'the signing certificate URL is missing');
    return this.certificates.publicKey(url, source, now);
  }

  private scheme(endpoint: EndpointConfig): Scheme {
    const scheme = this.schemes.get(endpoint.id);
    if (!scheme) throw new Error(`sender endpoint "${endpoint.id}" was not configured`);
    return scheme;
  }
}

/** Placeholders of the signed content only: an id or a type never renders them. */
const NO_VALUE_IN_IDS = new Set(['body', 'form', 'crc32', 'keyLines']);

function queryOf(url: string | undefined): URLSearchParams {
  const at = url?.indexOf('?') ?? -1;
  return new URLSearchParams(at < 0 ? '' : url!.slice(at + 1));
}

/** The item-relative pointer that a body pointer names through `items` (`<items>/<index><each><field>`), if any. */
function fieldOfItem(pointer: string, items: NonNullable<SenderSettings['items']>): string | undefined {
  const prefix = `${items.pointer}/`;
  if (!pointer.startsWith(prefix)) return undefined;
  // Canonical indexes only: resolvePointer finds "0", never "00".
  const index = /^(0|[1-9]\d*)(?=\/)/.exec(pointer.slice(prefix.length));
  if (!index) return undefined;
  const rest = pointer.slice(prefix.length + index[0].length);
  const each = items.each ?? '';
  return rest.startsWith(`${each}/`) ? rest.slice(each.length) : undefined;
}

/** The body as the sender's scheme reads it: a JSON object, a JSON array (batches), or a form's fields. */
function parseBody(rawBody: Buffer, format: SenderSettings['body']): unknown {
  if (format === 'json') return parseJsonObject(rawBody);
  if (format === 'json-array') {
    let value: unknown;
    try {
      value = JSON.parse(rawBody.toString('utf8'));
    } catch {
      throw new BadRequestError('malformed_json', 'body is not valid JSON');
    }
    if (!Array.isArray(value)) throw new BadRequestError('malformed_json', 'body is not a JSON array');
    return value;
  }
  const text = utf8Text(rawBody);
  if (text === undefined) throw new BadRequestError('malformed_form', 'body is not valid UTF-8');
  // No prototype: a field named constructor, toString or __proto__ is a field like any other.
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(text)) {
    const had = fields[name];
    fields[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return fields;
}

/** Twilio's form signing: names sorted, each name followed by its value (a repeated name's distinct values sorted). */
function sortedForm(fields: Record<string, unknown>): string {
  return Object.keys(fields)
    .sort()
    .map((name) => {
      const value = fields[name];
      return Array.isArray(value)
        ? [...new Set(value as string[])]
            .sort()
            .map((v) => name + v)
            .join('')
        : name + String(value);
    })
    .join('');
}

/** A field as text: strings as they are, numbers and booleans written out, anything else absent. */
function fieldText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** A batch's identity: the digest of its elements' ids, sorted (a retry of the same events, in any order, is the same). */
function eachDigest(body: unknown, pointer: string): string | undefined {
  if (!Array.isArray(body) || body.length === 0) return undefined;
  const ids = body.map((element) => fieldText(resolvePointer(element, pointer)));
  if (ids.some((id) => id === undefined || id === '')) return undefined;
  return `batch-${createHash('sha256').update(ids.sort().join('\n')).digest('hex')}`;
}

function hashOf(req: Request, settings: SenderSettings): Hash {
  const { hashBy } = settings.key;
  if (!hashBy) return settings.key.hash;
  const version = fieldText(resolvePointer(req.body, hashBy.pointer)) ?? '';
  // Own keys only: a body naming "constructor" or "__proto__" must not find what every object inherits.
  const hash = Object.hasOwn(hashBy.values, version) ? hashBy.values[version] : undefined;
  if (!hash) throw new UnauthorizedError('unsupported_signature_version', 'the signature version is not one the endpoint accepts');
  return hash;
}

/** A malformed signature (a DER that does not parse) is a signature that does not verify. */
function publicKeyVerifies(hash: Hash | null, data: Buffer, key: KeyObject, signatures: Buffer[]): boolean {
  return signatures.some((signature) => {
    try {
      return verifySignature(hash, data, key, signature);
    } catch {
      return false;
    }
  });
}

/** A PEM file whose first certificate parses (a CA bundle holds several). */
function isPemCertificate(text: string): boolean {
  if (!text.includes('-----BEGIN CERTIFICATE-----')) return false;
  try {
    new X509Certificate(text);
    return true;
  } catch {
    return false;
  }
}

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A public key as senders publish them: PEM (a key or a certificate), base64 DER (SendGrid), or 64 hex digits (Discord's Ed25519). */
function parsePublicKey(value: string, type: SenderSettings['key']['type']): KeyObject | undefined {
  try {
    const text = value.trim();
    let key: KeyObject;
    if (text.startsWith('-----BEGIN CERTIFICATE')) key = new X509Certificate(text).publicKey;
    else if (text.startsWith('-----BEGIN')) key = createPublicKey(text);
    else if (type === 'ed25519' && /^[0-9a-fA-F]{64}$/.test(text))
      key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(text, 'hex')]), format: 'der', type: 'spki' });
    else key = createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
    const expected = { ed25519: 'ed25519', 'ecdsa-p256': 'ec', rsa: 'rsa', hmac: '', token: '' }[type];
    if (key.asymmetricKeyType !== expected) return undefined;
    if (type === 'ecdsa-p256' && key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') return undefined;
    return key;
  } catch {
    return undefined;
  }
}

/** The signatures in the configured header (decoded) and, for `key=value` pairs, the timestamp among them. */
function readSignatureHeader(request: WebhookRequest, settings: SenderSettings): { signatures: Buffer[]; pairTimestamp?: string } {
  const { signature } = settings;
  const raw = header(request.headers, signature.header!);
  if (!raw) throw new UnauthorizedError('missing_signature', `${signature.header} header is missing`);
  let entries = (signature.separator ? raw.split(signature.separator) : [raw]).map((e) => e.trim()).filter(Boolean);
  let pairTimestamp: string | undefined;
  if (signature.pairs) {
    const pairs = entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as const).filter(([k]) => k);
    pairTimestamp = pairs.find(([k]) => k === signature.pairs!.timestamp)?.[1];
    entries = pairs.filter(([k]) => k === signature.pairs!.signature).map(([, v]) => v);
  }
  return { signatures: decodeSignatures(entries, settings), pairTimestamp };
}

function readSignatureField(item: unknown, settings: SenderSettings): Buffer[] {
  const value = fieldText(resolvePointer(item, settings.signature.pointer!));
  if (!value) throw new UnauthorizedError('missing_signature', 'the signature field is missing');
  return decodeSignatures([value.trim()], settings);
}

function decodeSignatures(entries: string[], settings: SenderSettings): Buffer[] {
  const { signature } = settings;
  if (signature.prefix) entries = entries.filter((e) => e.startsWith(signature.prefix!)).map((e) => e.slice(signature.prefix!.length));
  if (signature.encoding === 'text') {
    if (entries.length === 0) throw new UnauthorizedError('missing_signature', 'the token is missing');
    return entries.map((e) => Buffer.from(e, 'utf8'));
  }
  const shape = signature.encoding === 'hex' ? /^(?:[0-9a-fA-F]{2})+$/ : /^[A-Za-z0-9+/_-]+={0,2}$/;
  const encoding = signature.encoding;
  const signatures = entries.filter((e) => shape.test(e)).map((e) => Buffer.from(e, encoding));
  if (signatures.length === 0) throw new UnauthorizedError('unsupported_signature_version', 'no signature in the configured form');
  return signatures;
}

/** Milliseconds since the epoch, or undefined when `value` is not a timestamp in `format`. */
function timestampMs(value: unknown, format: NonNullable<SenderSettings['timestamp']>['format']): number | undefined {
  if (format === 'iso8601') {
    if (typeof value !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/.test(value)) return undefined;
    // Twitch writes nanoseconds, which Date.parse does not take: milliseconds are enough for a tolerance.
    const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1'));
    return Number.isNaN(ms) ? undefined : ms;
  }
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,15}(\.\d+)?$/.test(text)) return undefined;
  const whole = Number(text.split('.')[0]);
  return format === 'unix-seconds' ? whole * 1000 : whole;
}
