import { z } from 'zod';

/**
 * How one sender signs, as written in an endpoint's `settings` for provider
 * "hmac". Every field says where a value comes from; anything taken from an
 * unsigned header must say `"unsigned": true`.
 */
export const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]{1,100}$/, 'a header name (letters, digits, "-")')
  .transform((name) => name.toLowerCase());
export const pointer = z.string().regex(/^(\/([^~/]|~[01])*)+$/, 'a JSON pointer into the body, e.g. "/event/id"');

/** Where a sender's timestamp is, and its form. */
export const timestampSource = z
  .object({
    header: headerName.optional(),
    /** In the signature header's pairs (`signature.pairs.timestamp`). */
    inSignature: z.literal(true).optional(),
    pointer: pointer.optional(),
    format: z.enum(['unix-seconds', 'unix-milliseconds', 'iso8601']).default('unix-seconds'),
  })
  .strict();

const fromHeader = z.object({ header: headerName, unsigned: z.literal(true).optional() }).strict();
const fromBody = z.object({ pointer }).strict();

export const hmacSettingsSchema = z
  .object({
    algorithm: z.enum(['sha1', 'sha256', 'sha512']).default('sha256'),
    /** How the configured secret becomes the key: its UTF-8 bytes, or decoded after an optional prefix (`whsec_`). */
    secret: z
      .object({ encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'), prefix: z.string().min(1).optional() })
      .strict()
      .default({ encoding: 'utf8' }),
    signature: z
      .object({
        header: headerName,
        encoding: z.enum(['hex', 'base64']).default('hex'),
        /** Each signature starts with this (`sha256=`, `v0=`, `v1,`); entries without it are skipped. */
        prefix: z.string().min(1).optional(),
        /** Several entries in one header, split on this (`,` or ` `). */
        separator: z.string().min(1).optional(),
        /** Entries are `key=value` (Stripe `t=..,v1=..`, Paddle `ts=..;h1=..`): the signatures' key, and the timestamp's if it is there. */
        pairs: z
          .object({ signature: z.string().min(1), timestamp: z.string().min(1).optional() })
          .strict()
          .optional(),
      })
      .strict(),
    /** What is signed: the body, or a template of `{timestamp}`, `{id}` and `{body}` with literal separators. */
    signed: z.union([z.literal('body'), z.object({ template: z.string().min(1) }).strict()]).default('body'),
    timestamp: timestampSource.optional(),
    eventId: z.union([fromHeader, fromBody]),
    eventType: z.union([fromHeader, fromBody]),
  })
  .strict();

export type HmacSettings = z.infer<typeof hmacSettingsSchema>;

const PLACEHOLDER = /\{(timestamp|id|body)\}|\{[^}]*\}/g;

export type TemplatePart = { literal: string } | { value: 'timestamp' | 'id' | 'body' };

/** The signed template as parts, or the mistakes in it. */
export function parseTemplate(template: string): { parts: TemplatePart[]; problems: string[] } {
  const parts: TemplatePart[] = [];
  const problems: string[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (match.index > last) parts.push({ literal: template.slice(last, match.index) });
    if (match[1]) parts.push({ value: match[1] as 'timestamp' | 'id' | 'body' });
    else problems.push(`settings.signed.template: unknown placeholder ${match[0]} (known: {timestamp}, {id}, {body})`);
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push({ literal: template.slice(last) });
  const bodies = parts.filter((p) => 'value' in p && p.value === 'body').length;
  if (bodies !== 1) problems.push('settings.signed.template: must contain {body} exactly once');
  return { parts, problems };
}

/** RFC 6901: the value at `path` in `document`, or undefined. */
export function resolvePointer(document: unknown, path: string): unknown {
  let value = document;
  for (const token of path.slice(1).split('/')) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof value !== 'object' || value === null || !Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

export function isPointer(text: string): boolean {
  return pointer.safeParse(text).success;
}
