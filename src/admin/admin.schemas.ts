import { z } from 'zod';
import { BadRequestError } from '../common/errors';

const INBOX_STATUSES = ['pending', 'processing', 'done', 'ignored', 'quarantined'] as const;
const OUTBOX_STATUSES = ['pending', 'delivering', 'delivered', 'unresolved', 'dead'] as const;

const label = z.string().min(1).max(255);
const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));
const limit = z.coerce.number().int().min(1).max(500).default(50);
const cursor = z.string().min(1).max(200).optional();
const reason = z.string().trim().min(1).max(1000);

/** Query of GET /admin/inbox. Unknown keys are rejected: a misspelt filter must not widen the list. */
export const inboxListQuery = z
  .object({
    status: z.enum(INBOX_STATUSES).optional(),
    provider: label.optional(),
    type: label.optional(),
    tenant: label.optional(),
    endpoint: label.optional(),
    from: instant.optional(),
    to: instant.optional(),
    limit,
    cursor,
  })
  .strict();

/** Bulk replay: only rows that have settled may be replayed. */
export const bulkReplayBody = z
  .object({
    filter: z
      .object({
        status: z.enum(['done', 'ignored', 'quarantined']).optional(),
        provider: label.optional(),
        type: label.optional(),
        tenant: label.optional(),
        endpoint: label.optional(),
        from: instant.optional(),
        to: instant.optional(),
      })
      .strict(),
    dryRun: z.boolean(),
    reason,
  })
  .strict();

export const reasonBody = z.object({ reason }).strict();

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

export const resolveBody = z.object({ outcome: z.enum(['delivered', 'retry']), reason }).strict();

export const createOrderBody = z
  .object({
    tenantId: label,
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

/**
 * Parses input with a schema; a failure is a 400 with the given reason and the
 * offending fields (never the values: a body may carry anything).
 */
export function parseOr400<S extends z.ZodType>(schema: S, input: unknown, reason: string): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (!result.success) {
    const fields = [...new Set(result.error.issues.map((i) => (i.path.length ? i.path.join('.') : i.code === 'unrecognized_keys' ? (i as { keys: string[] }).keys.join(',') : 'body')))];
    throw new BadRequestError(reason, `invalid ${fields.join(', ')}`);
  }
  return result.data;
}
