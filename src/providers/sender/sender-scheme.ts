import { z } from 'zod';
import { headerName, isPointer, pointer, timestampSource } from '../hmac/hmac-scheme';

/**
 * How one sender signs, answers its handshakes and names its events, as
 * written in an endpoint's `settings` for provider "sender" (usually
 * `{"preset": "twilio", ...}`, a file of config/senders/ completed by the
 * endpoint). Values are templates: literal text and `{placeholders}` (see
 * PLACEHOLDERS); what is signed says which of them verification covers.
 */
const template = z.string().min(1).max(500);

const certificateSchema = z
  .object({
    /** Where the request names its signing certificate's URL. */
    url: z.union([z.object({ header: headerName }).strict(), z.object({ pointer }).strict()]),
    /** Regular expressions the URL's host name must match in full (e.g. `^sns\\.[a-z0-9-]+\\.amazonaws\\.com$`). */
    hosts: z.array(z.string().min(1)).min(1),
    /** A regular expression the URL's path must match (SNS: `\\.pem$`). */
    path: z.string().min(1).optional(),
    /** Extra trust anchors (PEM file) for the HTTPS fetch, besides the system's: a corporate proxy, a test. */
    caFile: z.string().min(1).optional(),
  })
  .strict();

export const KEY_TYPES = ['hmac', 'ed25519', 'ecdsa-p256', 'rsa', 'token'] as const;

const keySchema = z
  .object({
    /**
     * hmac: the endpoint's secrets are HMAC keys. token: not a signature, a shared value
     * the request carries (Microsoft Graph's clientState), compared in constant time.
     * The others: its secrets are public keys (PEM, base64 DER, or hex for Ed25519), or `certificate`.
     */
    type: z.enum(KEY_TYPES),
    hash: z.enum(['sha1', 'sha256', 'sha512']).default('sha256'),
    /** The hash named by a body field (SNS `SignatureVersion` "1" = sha1, "2" = sha256); values not listed are refused. */
    hashBy: z
      .object({ pointer, values: z.record(z.string(), z.enum(['sha1', 'sha256', 'sha512'])) })
      .strict()
      .optional(),
    /** hmac: how each secret becomes the key (its UTF-8 bytes, or decoded after an optional prefix). */
    encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
    prefix: z.string().min(1).optional(),
    /** rsa: the key is in a certificate the request points to (AWS SNS, PayPal), fetched over HTTPS from the allowed hosts only. */
    certificate: certificateSchema.optional(),
  })
  .strict();

const handshakeSchema = z
  .object({
    method: z.enum(['GET', 'POST']).default('POST'),
    /**
     * When the request is this handshake. `query`: a query parameter is present
     * (answered before any signature: there is no body to verify), else a body
     * field or a header equals a value (answered only after the signature verified).
     */
    when: z.union([
      z.object({ query: z.string().min(1).max(100), equals: z.string().optional() }).strict(),
      z.object({ pointer, equals: z.union([z.string(), z.number(), z.boolean()]) }).strict(),
      z.object({ header: headerName, equals: z.string() }).strict(),
    ]),
    /** A GET challenge's shared token (Meta `hub.verify_token`): compared with the endpoint secret of that label. */
    verifyToken: z
      .object({ query: z.string().min(1).max(100), secret: z.string().min(1) })
      .strict()
      .optional(),
    reply: z.union([
      z.object({ json: z.record(z.string(), template) }).strict(),
      z.object({ text: template }).strict(),
      z.object({ status: z.literal(204) }).strict(),
    ]),
  })
  .strict();

export const senderSettingsSchema = z
  .object({
    /** The preset this endpoint started from (config/senders/<name>.json); resolved before this schema. */
    preset: z.string().optional(),
    /** For people reading a preset file. */
    about: z.string().optional(),
    body: z.enum(['json', 'json-array', 'form']).default('json'),
    key: keySchema,
    signature: z
      .object({
        header: headerName.optional(),
        /** In the body (Mailgun `/signature/signature`); with `items`, in each item. */
        pointer: pointer.optional(),
        /** `text`: taken as it is (a token's value). */
        encoding: z.enum(['hex', 'base64', 'text']).default('hex'),
        prefix: z.string().min(1).optional(),
        separator: z.string().min(1).optional(),
        pairs: z
          .object({ signature: z.string().min(1), timestamp: z.string().min(1).optional() })
          .strict()
          .optional(),
      })
      .strict(),
    /** What is signed, e.g. `{timestamp}.{body}`, `{url}{form}`, `{/signature/timestamp}{/signature/token}`. */
    signed: template.default('{body}'),
    /** Each element of this body array is signed on its own (Adyen's notification items): every one must verify. */
    items: z.object({ pointer, each: pointer.optional() }).strict().optional(),
    timestamp: timestampSource.optional(),
    eventId: template,
    eventType: template,
    /** Headers read though not signed, said knowingly (an id header a captured body could be replayed under). */
    unsignedHeaders: z.array(headerName).default([]),
    /** The body is not what is signed (only some of its fields are): reading the rest of it is said knowingly. */
    unsignedBody: z.literal(true).optional(),
    /** The URL as configured at the sender, which it signs (Twilio, Square, HubSpot); never taken from the request's Host. */
    publicUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Named values of the configuration used in templates as `{setting:name}` (PayPal's `webhookId`). */
    values: z.record(z.string(), z.string().min(1)).default({}),
    handshakes: z.array(handshakeSchema).default([]),
    /** What the sender expects as the answer to an event (Adyen: `[accepted]`; Discord: 204). */
    answer: z
      .union([
        z.object({ status: z.literal(200), text: z.string().min(1).max(100) }).strict(),
        z.object({ status: z.literal(204) }).strict(),
      ])
      .optional(),
  })
  .strict();

export type SenderSettings = z.infer<typeof senderSettingsSchema>;
export type Handshake = SenderSettings['handshakes'][number];

/**
 * The placeholders of templates. Signed content may use all but `digest`, `each`
 * and `hmac-hex`; ids and types read the body after verification.
 */
export type Placeholder =
  | { kind: 'body' | 'timestamp' | 'url' | 'method' | 'form' | 'crc32' | 'digest' }
  | { kind: 'header'; name: string }
  | { kind: 'setting'; name: string }
  | { kind: 'query'; name: string }
  | { kind: 'pointer'; pointer: string }
  | { kind: 'each'; pointer: string }
  | { kind: 'keyLines'; names: string[] }
  | { kind: 'hmac-hex'; pointer: string };

export type Part = { literal: string } | Placeholder;

const SIMPLE = new Set(['body', 'timestamp', 'url', 'method', 'form', 'crc32', 'digest']);

/** A template as parts, or why not. */
export function parseSenderTemplate(text: string): { parts: Part[]; problems: string[] } {
  const parts: Part[] = [];
  const problems: string[] = [];
  let last = 0;
  for (const match of text.matchAll(/\{([^{}]*)\}/g)) {
    if (match.index > last) parts.push({ literal: text.slice(last, match.index) });
    last = match.index + match[0].length;
    const inner = match[1];
    const colon = inner.indexOf(':');
    const [name, arg] = colon < 0 ? [inner, ''] : [inner.slice(0, colon), inner.slice(colon + 1)];
    if (SIMPLE.has(inner)) parts.push({ kind: inner as 'body' });
    else if (inner.startsWith('/') && isPointer(inner)) parts.push({ kind: 'pointer', pointer: inner });
    else if (name === 'header' && /^[A-Za-z0-9-]{1,100}$/.test(arg)) parts.push({ kind: 'header', name: arg.toLowerCase() });
    else if ((name === 'setting' || name === 'query') && arg) parts.push({ kind: name, name: arg });
    else if ((name === 'each' || name === 'hmac-hex') && isPointer(arg)) parts.push({ kind: name, pointer: arg });
    else if (name === 'keyLines' && /^[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*$/.test(arg)) parts.push({ kind: 'keyLines', names: arg.split(',') });
    else problems.push(`unknown placeholder ${match[0]}`);
  }
  if (last < text.length) parts.push({ literal: text.slice(last) });
  return { parts, problems };
}
