import { z } from 'zod';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;

const secretSchema = z
  .object({
    label: z.string().min(1),
    env: z.string().regex(ENV_NAME, 'the name of an environment variable (letters, digits, "_"), never the secret itself').optional(),
    value: z.string().min(1).optional(),
    notAfter: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((s) => (s.env === undefined) !== (s.value === undefined), {
    message: 'a secret needs exactly one of "env" or "value"',
  });

/** The provider's API: a key named by a variable, an optional base URL (proxies, tests), confirm reads, reconciliation. */
const apiSchema = z
  .object({
    env: z.string().regex(ENV_NAME, 'the name of an environment variable (letters, digits, "_"), never the key itself'),
    baseUrl: z.string().min(1).optional(),
    confirm: z.boolean().optional(),
    reconcile: z
      .object({
        enabled: z.boolean().default(true),
        intervalSeconds: z.number().int().min(10).max(86400).default(300),
        lookbackHours: z.number().int().positive().default(72),
        /** Stripe: list only events whose delivery failed (fewer calls; misses events Stripe never tried). */
        onlyFailedDeliveries: z.boolean().default(false),
      })
      .strict()
      .optional(),
    /** GitHub: the hook's owner and repository, or its organisation. */
    owner: z.string().min(1).optional(),
    repo: z.string().min(1).optional(),
    org: z.string().min(1).optional(),
  })
  .strict();
/**
 * A worker limit of a tenant or an endpoint (issue 34): at most `concurrency` of its events
 * processed at once, and `perSecond` started per second (bursts up to `burst`, by default a
 * second's worth), over every instance together.
 */
export const workLimitsSchema = z
  .object({
    concurrency: z.number().int().min(1).max(10_000).optional(),
    perSecond: z.number().positive().max(100_000).optional(),
    burst: z.number().int().min(1).max(100_000).optional(),
  })
  .strict()
  .refine((l) => l.concurrency !== undefined || l.perSecond !== undefined, { message: 'a limit needs "concurrency", "perSecond" or both' })
  .refine((l) => l.burst === undefined || l.perSecond !== undefined, { message: '"burst" is the bucket of "perSecond": give both' });

/** `data.object.shipping`: object keys only; an array on the way applies the rest of the path to each element. */
export const JSON_PATH = /^[A-Za-z0-9_$-]{1,100}(\.[A-Za-z0-9_$-]{1,100}){0,19}$/;

/**
 * An endpoint's or a tenant's id. No ":": operation keys and identity scopes join a tenant
 * and an order or endpoint with ":", so a tenant "acme:x" would name another tenant's keys.
 */
export const configId = z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, ".", "_" or "-" (1-100)');

export const endpointSchema = z
  .object({
    id: configId,
    provider: z.string().min(1),
    tenantId: configId,
    /** At least one, except for a provider whose key comes from elsewhere (a sender's certificate URL): checked by the registry. */
    secrets: z.array(secretSchema),
    toleranceSeconds: z
      .number()
      .int()
      .positive('must be positive: 0 would disable the timestamp check')
      .max(3600, 'at most 3600: a longer window would let a captured request be replayed for that long')
      .default(300),
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    eventTypes: z.array(z.string().min(1)).min(1).optional(),
    expect: z.record(z.string(), z.union([z.string(), z.boolean(), z.number()])).optional(),
    api: apiSchema.optional(),
    /** The provider's own settings (e.g. the scheme of provider "hmac"), checked by the provider at start. */
    settings: z.record(z.string(), z.unknown()).optional(),
    omit: z
      .array(z.string().regex(JSON_PATH, 'a JSON path of dot-separated keys (letters, digits, "_", "-", "$"), e.g. data.object.shipping'))
      .min(1)
      .optional(),
    limits: workLimitsSchema.optional(),
  })
  .strict();

const tenantSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, ".", "_" or "-" (1-100)'),
    limits: workLimitsSchema,
  })
  .strict();

export const endpointsFileSchema = z.object({ endpoints: z.array(endpointSchema), tenants: z.array(tenantSchema).optional() }).strict();

export type EndpointsFile = z.infer<typeof endpointsFileSchema>;
