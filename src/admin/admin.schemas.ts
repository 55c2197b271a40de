import { z } from 'zod';
import { BadRequestError } from '../common/errors';
import { configId } from '../config/endpoints.schema';

const INBOX_STATUSES = ['pending', 'processing', 'done', 'ignored', 'quarantined'] as const;
const OUTBOX_STATUSES = ['pending', 'delivering', 'delivered', 'unresolved', 'dead'] as const;

const label = z.string().min(1).max(255);
const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));
// Decimal digits only: Number() would also take '0x10', '1e2' or ' 7'.
const limit = z
  .string()
  .regex(/^\d{1,3}$/)
  .transform(Number)
  .pipe(z.number().int().min(1).max(500))
  .default(50);
const cursor = z.string().min(1).max(200).optional();
const reason = z.string().trim().min(1).max(1000);

/** The inbox filter's fields besides status: the list and the bulk replay narrow alike. */
const inboxFilter = {
  provider: label.optional(),
  type: label.optional(),
  tenant: label.optional(),
  endpoint: label.optional(),
  from: instant.optional(),
  to: instant.optional(),
};

/** Query of GET /admin/inbox. Unknown keys are rejected: a misspelt filter must not widen the list. */
export const inboxListQuery = z.object({ status: z.enum(INBOX_STATUSES).optional(), ...inboxFilter, limit, cursor }).strict();

/** Bulk replay: only rows that have settled may be replayed. */
export const bulkReplayBody = z
  .object({
    filter: z.object({ status: z.enum(['done', 'ignored', 'quarantined']).optional(), ...inboxFilter }).strict(),
    dryRun: z.boolean(),
    reason,
  })
  .strict();

export const reasonBody = z.object({ reason }).strict();

/** A body that carries nothing (POST /admin/inbox/:id/preview): none, or `{}`. */
export const emptyBody = z.object({}).strict();

/** POST /admin/reconciliation/run: every reconcilable endpoint without `endpoint`; the cursor's window without from/to. */
export const reconciliationRunBody = z
  .object({
    endpoint: label.optional(),
    from: instant.optional(),
    to: instant.optional(),
    dryRun: z.boolean().default(false),
    reason,
  })
  .strict();

export const outboxListQuery = z
  .object({
    status: z.enum(OUTBOX_STATUSES).optional(),
    destination: label.optional(),
    tenant: label.optional(),
    from: instant.optional(),
    to: instant.optional(),
    limit,
    cursor,
  })
  .strict();

/** Query of GET /admin/series: a window of the charts, optionally one endpoint or destination. */
export const seriesQuery = z
  .object({ window: z.enum(['1h', '24h', '7d']).default('1h'), endpoint: label.optional(), destination: label.optional() })
  .strict();

export const resolveBody = z.object({ outcome: z.enum(['delivered', 'retry']), reason }).strict();

export const createOrderBody = z
  .object({
    // An endpoint's tenant id: one with ":" would share another tenant's operation keys.
    tenantId: configId,
    id: label,
    totalMinor: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/)
      .transform((c) => c.toLowerCase()),
    customerEmail: z.email().max(320),
    providerPaymentId: label.optional(),
    // Order creation is how shops feed the system, so the reason is optional here (audited either way).
    reason: reason.optional(),
  })
  .strict();

/** POST /admin/erasure: one customer by e-mail address, or one order. */
export const erasureBody = z
  .object({
    email: z.email().max(320).optional(),
    tenantId: label.optional(),
    orderId: label.optional(),
    reason,
    dryRun: z.boolean().optional(),
  })
  .strict()
  .refine(
    (b) =>
      (b.email !== undefined) !== (b.tenantId !== undefined && b.orderId !== undefined) &&
      (b.tenantId === undefined) === (b.orderId === undefined),
    {
      message: 'either email, or tenantId and orderId',
    },
  );

export const auditListQuery = z
  .object({
    action: label.optional(),
    actor: label.optional(),
    target: label.optional(),
    from: instant.optional(),
    to: instant.optional(),
    limit,
    cursor,
  })
  .strict();

/** Query of GET /admin/rejections (the rejected-request log). */
export const rejectionListQuery = z
  .object({
    endpoint: label.optional(),
    reason: label.optional(),
    from: instant.optional(),
    to: instant.optional(),
    limit,
    cursor,
  })
  .strict();

/**
 * Parses input with a schema; a failure is a 400 whose reason names what was wrong
 * (`byField[top-level key]`, else `fallback`) and lists the offending fields, never
 * their values: a body may carry anything.
 */
export function parseOr400<S extends z.ZodType>(
  schema: S,
  input: unknown,
  fallback: string,
  byField: Record<string, string> = {},
): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  const fields: string[] = [];
  for (const issue of result.error.issues) {
    if (issue.path.length) fields.push(issue.path.join('.'));
    else if (issue.code === 'unrecognized_keys') fields.push(...issue.keys);
  }
  const first = result.error.issues[0];
  const key = first.path.length ? String(first.path[0]) : '';
  const reason = byField[key] ?? fallback;
  throw new BadRequestError(reason, fields.length ? `invalid ${[...new Set(fields)].join(', ')}` : 'invalid input');
}

/** Reasons of a list query's fields: a bad cursor or limit is named as such. */
export const LIST_QUERY_REASONS = { cursor: 'invalid_cursor', limit: 'invalid_limit' };

/** Reasons of a mutation body's fields. */
export const BODY_REASONS = { reason: 'reason_required', filter: 'invalid_filter', dryRun: 'invalid_body', outcome: 'invalid_outcome' };
