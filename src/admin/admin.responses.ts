import { z } from 'zod';
import { named } from './api-docs';

/**
 * The admin API's answers as zod schemas: the OpenAPI document's components, from which
 * the console's types are generated. Each is attached to its route with ApiZodResponse,
 * which compiles only while the schema is the JSON form of what the route returns.
 * Objects are strict so a test parsing real answers also catches a field the schema lacks.
 */

const obj = z.strictObject;
/** A Date in an answer: JSON.stringify writes it as an ISO string in UTC. */
const instant = z.iso.datetime();
const counts = z.record(z.string(), z.number());

const INBOX_STATUSES = ['pending', 'processing', 'done', 'ignored', 'quarantined'] as const;
const OUTBOX_STATUSES = ['pending', 'delivering', 'delivered', 'unresolved', 'dead'] as const;

const page = <T extends z.ZodType>(id: string, item: T) =>
  named(
    id,
    obj({ items: z.array(item), nextCursor: z.string().nullable().describe('pass as `cursor` for the next page; null on the last') }),
  );

/** A repair's answer: the status before and after, and the audit row that records it. */
const statusChange = <S extends z.ZodEnum>(id: string, status: S) =>
  named(id, obj({ id: z.string(), before: status, after: status, auditId: z.string() }));

// ---- Session ----

export const session = named(
  'Session',
  obj({
    name: z.string(),
    role: z.enum(['viewer', 'operator']),
    tenants: z.array(z.string()).optional().describe('present when the token is limited to these tenants'),
  }),
);

// ---- Inbox ----

export const inboxEvent = named(
  'InboxEvent',
  obj({
    id: z.string(),
    sourceScope: z.string(),
    eventId: z.string(),
    tenantId: z.string(),
    provider: z.string(),
    endpointId: z.string(),
    eventType: z.string(),
    status: z.enum(INBOX_STATUSES),
    statusReason: z.string().nullable(),
    payloadSha256: z.string(),
    verifiedWith: z.string(),
    attempts: z.number(),
    nextAttemptAt: instant,
    lockedBy: z.string().nullable(),
    lockedUntil: instant.nullable(),
    lastError: z.string().nullable(),
    receivedAt: instant,
    completedAt: instant.nullable(),
    deliveries: z.number(),
    lastDeliveryAt: instant,
    digestConflicts: z.number(),
    payloadKeyId: z.string().nullable(),
    payloadPurged: z.boolean(),
    payload: z.unknown().optional().describe('operators only'),
    payloadUnreadable: z.string().optional(),
  }),
);

export const inboxEventPage = page('InboxEventPage', inboxEvent);

export const inboxStatusChange = statusChange('InboxStatusChange', z.enum(INBOX_STATUSES));

const tableWrites = obj({ inserted: z.number(), updated: z.number(), deleted: z.number() });

export const effectPreview = named(
  'EffectPreview',
  obj({
    id: z.string(),
    eventType: z.string(),
    status: z.enum(INBOX_STATUSES),
    replayRefusal: z
      .enum([
        'not_replayable',
        'payload_purged',
        'source_not_accepted',
        'event_type_not_accepted',
        'source_facts_missing',
        'endpoint_not_configured',
      ])
      .nullable()
      .describe('why a replay of it would be refused; null: it would run'),
    confirmRead: z
      .enum(['not_needed', 'stored_reading', 'skipped'])
      .describe(
        'the provider read the worker makes first: not needed; previewed with the reading stored at the last processing; or skipped (previewed from the body: the preview never calls a provider)',
      ),
    outcome: obj({
      status: z.enum(['done', 'ignored', 'quarantined', 'retry']),
      reason: z.string().nullable(),
      handler: z.string().nullable(),
    }).describe('what the worker would record'),
    transitions: z.array(obj({ tenantId: z.string(), orderId: z.string(), from: z.string(), to: z.string() })),
    operations: z
      .array(obj({ operationKey: z.string(), destination: z.string(), operationType: z.string(), aggregate: z.string().nullable() }))
      .describe('outbox entries it would write (an operation key already present is not written again)'),
    writes: z.record(z.string(), tableWrites).describe('every row it would write, by table'),
  }),
);

export const bulkReplayResult = named(
  'BulkReplayResult',
  obj({
    count: z.number(),
    dryRun: z.boolean(),
    batches: z.number(),
    byStatus: z.record(z.string(), counts).describe('by status, then status reason (`none` for none)'),
    refused: obj({
      source_not_accepted: z.number().optional(),
      event_type_not_accepted: z.number().optional(),
      source_facts_missing: z.number().optional(),
      endpoint_not_configured: z.number().optional(),
    }).describe('rows left alone because their endpoint refuses them, by refusal'),
    previews: z.array(effectPreview).optional().describe('dry run: the effect preview of the first 20 events that would run'),
  }),
);

// ---- Outbox and destinations ----

export const outboxEntry = named(
  'OutboxEntry',
  obj({
    id: z.string(),
    operationKey: z.string(),
    destination: z.string(),
    operationType: z.string(),
    tenantId: z.string(),
    status: z.enum(OUTBOX_STATUSES),
    attempts: z.number(),
    nextAttemptAt: instant,
    lockedBy: z.string().nullable(),
    lockedUntil: instant.nullable(),
    lastError: z.string().nullable(),
    lastStatusCode: z.number().nullable(),
    outcomeUnknown: z.boolean(),
    sourceEventId: z.string().nullable(),
    createdAt: instant,
    deliveredAt: instant.nullable(),
    aggregate: z.string().nullable(),
    aggregateSeq: z.number().nullable(),
    heldBy: z.string().nullable().describe('pending behind this earlier entry of its aggregate and destination'),
    payload: z.unknown().optional().describe('operators only'),
  }),
);

export const outboxEntryPage = page('OutboxEntryPage', outboxEntry);

export const outboxStatusChange = statusChange('OutboxStatusChange', z.enum(OUTBOX_STATUSES));

const circuitState = z.enum(['closed', 'open', 'half_open']);

export const destination = named(
  'Destination',
  obj({
    name: z.string(),
    registered: z.boolean(),
    origin: z.string().nullable(),
    settings: obj({
      concurrency: z.number(),
      circuit: obj({ failures: z.number(), cooldownMs: z.number() }),
      rateLimit: obj({ perSecond: z.number(), burst: z.number() }).nullable(),
    }).nullable(),
    circuit: obj({ state: circuitState, failures: z.number(), retryAt: instant.nullable(), probeUntil: instant.nullable() }),
    pausedUntil: instant.nullable(),
    paused: z.boolean(),
    lastError: z.string().nullable(),
    changedAt: instant.nullable(),
    backlog: obj({ pending: z.number(), held: z.number(), delivering: z.number(), unresolved: z.number(), dead: z.number() }),
  }),
);

export const destinationList = named('DestinationList', obj({ items: z.array(destination) }));

// ---- Timeline ----

export const timelineEntry = named(
  'TimelineEntry',
  obj({
    at: instant,
    kind: z.enum(['received', 'redelivered', 'attempt', 'order_transition', 'operation_created', 'delivery_attempt', 'operator_action']),
    detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  }),
);

export const timeline = named('Timeline', obj({ event: inboxEvent, entries: z.array(timelineEntry), operations: z.array(outboxEntry) }));

// ---- Orders, audit, erasure ----

export const order = named(
  'Order',
  obj({
    tenantId: z.string(),
    id: z.string(),
    status: z.enum(['awaiting_payment', 'paid', 'refunded', 'canceled']),
    providerPaymentId: z.string().nullable(),
    totalMinor: z.number(),
    currency: z.string(),
    customerEmail: z.string().optional().describe('operators only'),
    lastPaymentError: z.string().nullable(),
    createdAt: instant,
    updatedAt: instant,
  }),
);

export const auditRecord = named(
  'AuditRecord',
  obj({
    id: z.string(),
    actor: z.string(),
    role: z.string(),
    action: z.string(),
    target: z.string(),
    reason: z.string(),
    beforeStatus: z.string().nullable(),
    afterStatus: z.string().nullable(),
    details: z.record(z.string(), z.unknown()).nullable(),
    at: instant,
  }),
);

export const auditRecordPage = page('AuditRecordPage', auditRecord);

// ---- Rejected-request log ----

export const rejection = named(
  'Rejection',
  obj({
    id: z.string(),
    at: instant,
    endpointId: z.string(),
    tenantId: z.string(),
    provider: z.string(),
    reason: z.string().describe('the stable `reason` the request was answered with'),
    httpStatus: z.number(),
    remoteAddress: z.string().describe('the client as the intake budget sees it (INGEST_TRUSTED_PROXIES; IPv6 by its /64)'),
    declaredBytes: z.number().nullable().describe('the Content-Length the client declared'),
    receivedBytes: z.number().nullable().describe('body bytes read before the refusal; null when refused before the end of the body'),
    unloggedBefore: z.number().describe("this endpoint's rejections since the previous row that the log did not keep (sampling)"),
  }),
);

export const rejectionPage = page('RejectionPage', rejection);

export const erasureResult = named(
  'ErasureResult',
  obj({
    dryRun: z.boolean(),
    orders: z.array(obj({ tenantId: z.string(), orderId: z.string() })),
    outboxEntries: z.number(),
    recipientsBlanked: z.number(),
    payloadsPurged: z.number(),
    payloadsRedacted: z.number(),
    unreadable: z.array(obj({ id: z.string(), keyId: z.string().nullable(), reason: z.string() })),
    complete: z.boolean(),
    auditId: z.string(),
  }),
);

// ---- Stats and series ----

export const endpointStats = named(
  'EndpointStats',
  obj({ endpoint: z.string(), pending: z.number(), processing: z.number(), quarantined: z.number(), acceptedPerMinute: z.number() }),
);

export const workerLimit = named(
  'WorkerLimit',
  obj({
    kind: z.enum(['tenant', 'endpoint']),
    name: z.string(),
    tenantId: z.string(),
    concurrency: z.number().optional().describe('at most this many of its events processing at once, over every instance'),
    perSecond: z.number().optional().describe('at most this many of its events started per second, in bursts of up to `burst`'),
    burst: z.number().optional(),
    inFlight: z.number().describe('its events processing now, on every instance'),
    due: z.number().describe('its pending events due now (counted up to 100,000)'),
    tokens: z.number().optional().describe("its rate's events that may start now"),
  }),
);

export const stats = named(
  'Stats',
  obj({
    at: instant,
    inbox: obj({
      byStatus: counts,
      oldestPendingAgeSeconds: z.number().describe('of the oldest pending event not waiting (0 when none)'),
      waiting: z
        .number()
        .describe('pending events that are early and wait for an earlier one (a refund for its payment), without counting attempts'),
      quarantined: z.number(),
      retrying: z.number(),
      maxAttempts: z.number(),
      recurringFailures: z.array(obj({ provider: z.string(), type: z.string(), error: z.string(), count: z.number() })),
      acceptToDoneSeconds: obj({
        window: z.literal('1h'),
        completed: z.number(),
        p50: z.number().nullable(),
        p95: z.number().nullable(),
        p99: z.number().nullable(),
      }),
    }),
    outbox: obj({
      byStatus: counts,
      oldestPendingAgeSeconds: z.number(),
      unresolved: z.number(),
      dead: z.number(),
      recurringFailures: z.array(obj({ destination: z.string(), type: z.string(), error: z.string(), count: z.number() })),
    }),
    rates: obj({ windowSeconds: z.number(), acceptedPerMinute: z.number(), donePerMinute: z.number(), deliveredPerMinute: z.number() }),
    byEndpoint: z.array(endpointStats),
    workerLimits: z.array(workerLimit),
  }),
);

export const seriesPoint = named(
  'SeriesPoint',
  obj({
    at: instant,
    counts: obj({ accepted: z.number(), done: z.number(), quarantined: z.number(), delivered: z.number(), failed: z.number() }),
    backlog: z.number().nullable(),
    oldestPendingAgeSeconds: z.number().nullable(),
  }),
);

export const series = named(
  'Series',
  obj({
    window: z.enum(['1h', '24h', '7d']),
    stepSeconds: z.number(),
    from: instant,
    to: instant,
    inbox: z.array(seriesPoint),
    outbox: z.array(seriesPoint),
    endpoints: z.array(z.string()),
    destinations: z.array(z.string()),
  }),
);

// ---- Reconciliation ----

export const reconciliationRun = named(
  'ReconciliationRun',
  obj({
    id: z.string(),
    endpointId: z.string(),
    requestedBy: z.string(),
    reason: z.string(),
    dryRun: z.boolean(),
    windowFrom: instant.nullable(),
    windowTo: instant.nullable(),
    advancesCursor: z.boolean(),
    status: z.enum(['requested', 'running', 'succeeded', 'failed']),
    position: z.string().nullable(),
    listed: z.number(),
    foundMissing: z.number(),
    accepted: z.number(),
    duplicates: z.number().nullable(),
    ignored: z.number().nullable(),
    invalid: z.number().nullable(),
    byReason: counts.nullable(),
    apiCalls: z.number(),
    error: z.string().nullable(),
    requestedAt: instant,
    startedAt: instant.nullable(),
    finishedAt: instant.nullable(),
  }),
);

export const endpointReconciliation = named(
  'EndpointReconciliation',
  obj({
    endpointId: z.string(),
    provider: z.string(),
    scheduled: z.boolean(),
    intervalSeconds: z.number().nullable(),
    lookbackHours: z.number(),
    cursor: instant.nullable(),
    lastSuccessAt: instant.nullable(),
    lastRun: reconciliationRun.nullable(),
    recentRuns: z.array(reconciliationRun),
  }),
);

export const reconciliationOverview = named('ReconciliationOverview', obj({ endpoints: z.array(endpointReconciliation) }));

export const reconciliationRequested = named(
  'ReconciliationRequested',
  obj({
    runs: z.array(obj({ id: z.string(), endpointId: z.string() })),
    skipped: z.array(obj({ endpointId: z.string(), reason: z.string() })),
  }),
);

// ---- Payload keys ----

export const payloadKeyReport = named(
  'PayloadKeyReport',
  obj({
    encrypted: z.boolean(),
    current: z.string().nullable(),
    ring: z.array(z.string()),
    keys: z.array(obj({ keyId: z.string().nullable(), rows: z.number(), current: z.boolean(), inRing: z.boolean() })),
    reencryption: obj({ remaining: z.number(), done: z.boolean() }),
  }),
);

export const identityKeys = named(
  'IdentityKeys',
  obj({
    /** Events the sender states from this time on are keyed by it (null: by id alone, until the switch). */
    keyedFrom: z.string().nullable(),
    oldConstraint: z.boolean(),
  }),
);

export const timeKeysSwitch = named(
  'TimeKeysSwitch',
  obj({ keyedFrom: z.string(), switchedAt: z.string(), oldConstraintDropped: z.boolean() }),
);
