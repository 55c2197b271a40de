import type { ProviderReading } from '../provider-api/state-reader';
import type { PayloadUnreadable } from './inbox-payloads';
import type { UnitOfWork } from '../database/unit-of-work';

export type { ProviderReading };

/** The NOTIFY channel that wakes the workers: after an accept or a replay commits, before the next poll. */
export const INBOX_CHANNEL = 'webhook_inbox';

export type InboxStatus = 'pending' | 'processing' | 'done' | 'ignored' | 'quarantined';

/** Verified facts about an event's sender (Stripe account and mode, GitHub hook id, ...), keyed as `expect` is. */
export type SourceFacts = Readonly<Record<string, string | boolean | number | undefined>>;

/** What says two deliveries are the same event. */
export interface EventIdentity {
  sourceScope: string;
  eventId: string;
  /** The sender's stated time of the event (VerifiedEvent.occurredAt), when it states one. */
  occurredAt?: Date;
}

export interface AcceptRequest extends EventIdentity {
  tenantId: string;
  provider: string;
  endpointId: string;
  eventType: string;
  /** The verified body as received (JSON text): stored without re-serialising in Node. */
  payloadJson: string;
  payloadSha256: string;
  verifiedWith: string;
  /** The verified facts about the sender that `expect` was checked against (a replay checks them again). */
  sourceFacts: SourceFacts;
  /** `ignored` for a verified event this endpoint does not act on. */
  status: 'pending' | 'ignored';
  statusReason?: string;
  /** W3C traceparent of the request's span (tracing on): the worker continues its trace. */
  traceContext?: string | null;
  /**
   * The identity is shared by the tenant's endpoints of this provider (WebhookProvider.namespaceSpansEndpoints):
   * a pending copy found `ignored` by another endpoint's type filter takes the row over.
   */
  takesOverIgnored?: boolean;
}

export interface AcceptResult {
  /** `accepted`: this request created the row; `duplicate`: the identity was already there. */
  outcome: 'accepted' | 'duplicate';
  id: string;
  status: InboxStatus;
  /** The identity was known with a different payload digest (the original is kept). */
  digestConflict: boolean;
  /** Inserted already claimed by this instance's worker (acceptMany's InsertClaim): the event to hand it. */
  claimed?: InboxEvent;
}

/** Which event, from where: the fields every view of an inbox row starts with. */
export interface InboxIdentity {
  /** The inbox row id. */
  id: string;
  sourceScope: string;
  eventId: string;
  tenantId: string;
  provider: string;
  endpointId: string;
  eventType: string;
}

/** One claimed event as a handler sees it. */
export interface InboxEvent extends InboxIdentity {
  /** The verified body as stored (after the endpoint's `omit`), parsed; null once purged, undefined when `unreadable`. */
  payload: any;
  /** The stored payload did not open (inbox-payloads.ts): the worker quarantines or retries, never runs a handler. */
  unreadable?: { reason: PayloadUnreadable; message: string };
  /** Failed attempts before this one. */
  attempts: number;
  receivedAt: Date;
  /** The verified facts about the sender the event was accepted on (NULL for rows from before they were stored). */
  sourceFacts: SourceFacts | null;
  /** The claim that holds the event (`locked_by`): completion is fenced by it, so a lane that lost the lease changes nothing. */
  lease: string;
  /**
   * The provider's answer about this event's object, when its endpoint confirms transitions
   * by a read of the provider's API: an input the worker's confirm step gives the handler
   * (on a copy of the claimed event, before the transaction), never written by a handler.
   */
  readonly confirmation?: ProviderReading;
  /** The traceparent stored by the request that accepted it; null when tracing was off. */
  traceContext?: string | null;
}

/**
 * What a handler decided. Throwing `TransientError` (or any error that is not a
 * `PermanentError`) retries with backoff; throwing `PermanentError` quarantines.
 */
export type HandlerOutcome = { kind: 'done' } | { kind: 'quarantine'; reason: string };

export type WebhookEventHandler = (event: InboxEvent, tx: UnitOfWork) => Promise<HandlerOutcome>;

/**
 * A batch handler applies many events in one go, with the same result as
 * applying them one by one in the order given: per event, an outcome or the
 * error it would have thrown (and then it wrote nothing for that event).
 */
export type WebhookBatchHandler = (events: InboxEvent[], tx: UnitOfWork) => Promise<(HandlerOutcome | Error)[]>;

/** A registered handler: `batch` when it has set-based SQL for many events at once. */
export interface RegisteredHandler {
  /** Identifies the method; events with the same id may share one batch call. */
  id: string;
  handle: WebhookEventHandler;
  batch?: WebhookBatchHandler;
  /** The payload paths it reads; undefined: all of it. */
  reads?: readonly string[];
}

/** What the worker would record for an event (the effect preview): `retry` with the error it would store. */
export interface PreviewOutcome {
  status: 'done' | 'ignored' | 'quarantined' | 'retry';
  reason: string | null;
  /** The handler that ran; null when the event reaches none (refused by its endpoint, unreadable, no handler). */
  handler: string | null;
}

// ---- Operator reads and repairs (InboxAdminService) ----

/** Admin filter over the inbox; every field narrows, none widens. */
export interface InboxFilter {
  status?: InboxStatus;
  provider?: string;
  type?: string;
  tenant?: string;
  endpoint?: string;
  /** The caller's tenant scope (a token limited to tenants); undefined: all. */
  tenants?: readonly string[];
  /** received_at >= from */
  from?: Date;
  /** received_at < to */
  to?: Date;
}

/** Metadata of an inbox row; `payload` only when asked for (operators). */
export interface InboxEventView extends InboxIdentity {
  status: InboxStatus;
  statusReason: string | null;
  payloadSha256: string;
  verifiedWith: string;
  attempts: number;
  nextAttemptAt: Date;
  lockedBy: string | null;
  lockedUntil: Date | null;
  lastError: string | null;
  receivedAt: Date;
  completedAt: Date | null;
  deliveries: number;
  lastDeliveryAt: Date;
  digestConflicts: number;
  /** The key that sealed the stored payload; null when clear or purged. */
  payloadKeyId: string | null;
  /** Retention or an erasure purged the body (identity, digest and status are kept). */
  payloadPurged: boolean;
  payload?: unknown;
  /** Set when the stored payload did not open (`payload` is then null). */
  payloadUnreadable?: string;
}

export interface InboxStatusChange {
  id: string;
  before: InboxStatus;
  after: InboxStatus;
}

/** Cheap figures for /metrics: non-terminal statuses only (partial indexes). */
export interface InboxBacklog {
  pending: number;
  processing: number;
  quarantined: number;
  /** Pending rows that are early events waiting for an earlier one (a refund for its payment), counted in `pending` too. */
  waiting: number;
  /** received_at of the oldest pending row not waiting, or null. */
  oldestPendingReceivedAt: Date | null;
}

export interface InboxStats {
  byStatus: Record<string, number>;
  /** As in InboxBacklog. */
  waiting: number;
  oldestPendingReceivedAt: Date | null;
  /** Pending rows that already failed at least once, and the most attempts on any open row. */
  retrying: number;
  maxAttempts: number;
  recurringFailures: { provider: string; type: string; error: string; count: number }[];
  /** Accept-to-done seconds over the last hour. */
  latency: { completed: number; p50: number | null; p95: number | null; p99: number | null };
}

/** What happened since a moment: for rates on the console's overview. */
export interface InboxActivity {
  accepted: number;
  done: number;
  byEndpoint: { endpoint: string; pending: number; processing: number; quarantined: number; accepted: number }[];
}

/** One processing attempt of an event, as the statement that recorded its outcome wrote it. */
export interface InboxAttempt {
  attempt: number;
  at: Date;
  /** The claim token (`<instance>:<claim number>`); null for none. */
  lease: string | null;
  outcome: 'done' | 'ignored' | 'quarantined' | 'retry' | 'lease_expired';
  reason: string | null;
  error: string | null;
}

/** A stored payload an erasure could not check: its key is not in this instance's ring, it does not decrypt, or it does not parse or walk. */
export interface UnreadablePayload {
  id: string;
  keyId: string | null;
  reason: string;
}

/** What an erasure did to stored payloads: settled ones purged, open ones redacted, and those it could not read. */
export interface PayloadErasure {
  purged: string[];
  redacted: string[];
  unreadable: UnreadablePayload[];
}

/** The erasure's rules for payloads, from the module that knows what a customer's data looks like. */
export interface PayloadEraser {
  /** Whether the payload mentions the customer (settled rows: done, ignored; the others are open work). */
  matches(row: { tenantId: string; settled: boolean; payload: unknown }): boolean;
  /** The payload with the customer's data replaced (in place allowed), and how many values were. */
  redact(payload: unknown): { payload: unknown; replaced: number };
}
