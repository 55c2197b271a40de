/** The NOTIFY channel that wakes the relays: after new entries or a re-queue commit, before the next poll. */
export const OUTBOX_CHANNEL = 'outbox';

/**
 * Notified by an erasure's transaction when it blanked an e-mail recipient, delivered at its
 * commit: every relay re-reads the recipients of the entries it holds and has not sent yet.
 */
export const OUTBOX_ERASURE_CHANNEL = 'outbox_erasure';

export type OutboxStatus = 'pending' | 'delivering' | 'delivered' | 'unresolved' | 'dead';

// ---- Operator reads and repairs (OutboxAdminService) ----

export interface OutboxFilter {
  status?: OutboxStatus;
  destination?: string;
  tenant?: string;
  /** The caller's tenant scope (a token limited to tenants); undefined: all. */
  tenants?: readonly string[];
  from?: Date;
  to?: Date;
}

export interface OutboxEntryView {
  id: string;
  operationKey: string;
  destination: string;
  operationType: string;
  tenantId: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date;
  lockedBy: string | null;
  lockedUntil: Date | null;
  lastError: string | null;
  lastStatusCode: number | null;
  outcomeUnknown: boolean;
  sourceEventId: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  /** The aggregate within the tenant and this entry's place in it (null for unordered entries). */
  aggregate: string | null;
  aggregateSeq: number | null;
  /** Pending but held: the id of the earlier entry of its aggregate and destination that is not delivered. */
  heldBy: string | null;
  payload?: unknown;
}

export interface OutboxBacklog {
  /** Includes the held ones. */
  pending: number;
  /** Pending behind an earlier entry of their aggregate that is not delivered. */
  held: number;
  delivering: number;
  unresolved: number;
  dead: number;
  oldestPendingCreatedAt: Date | null;
}

export interface OutboxStats {
  byStatus: Record<string, number>;
  oldestPendingCreatedAt: Date | null;
  recurringFailures: { destination: string; type: string; error: string; count: number }[];
}

export interface OutboxStatusChange {
  id: string;
  before: OutboxStatus;
  after: OutboxStatus;
}

/** One delivery attempt of an entry, as the statement that recorded its outcome wrote it. */
export interface OutboxAttempt {
  outboxId: string;
  attempt: number;
  at: Date;
  /** The relay's claim token (`<instance>:<round>`). */
  lease: string;
  outcome: 'delivered' | 'retry' | 'dead' | 'unresolved';
  statusCode: number | null;
  durationMs: number | null;
  outcomeQuery: 'applied' | 'not_applied' | 'unknown' | null;
  retryAfterMs: number | null;
  error: string | null;
}

// ---- Destinations (GET /admin/destinations, metrics) ----

export interface DestinationStateRow {
  destination: string;
  circuit: 'closed' | 'open' | 'half_open';
  failures: number;
  retry_at: Date | null;
  probe_until: Date | null;
  paused_until: Date | null;
  tokens: number | null;
  tokens_at: Date | null;
  last_error: string | null;
  changed_at: Date | null;
}

/** One destination as operators see it: its settings, its shared state, its open entries. */
export interface DestinationView {
  name: string;
  /** False for a destination that has entries or state but no registered class on this instance. */
  registered: boolean;
  /** The origin only: a URL may carry credentials in its path or query. */
  origin: string | null;
  settings: {
    concurrency: number;
    circuit: { failures: number; cooldownMs: number };
    rateLimit: { perSecond: number; burst: number } | null;
  } | null;
  circuit: {
    state: 'closed' | 'open' | 'half_open';
    /** Consecutive "down" answers while closed. */
    failures: number;
    /** Open: when the next probe may go. */
    retryAt: Date | null;
    /** Half open: a probe is in flight until then. */
    probeUntil: Date | null;
  };
  /** A Retry-After in force: no request before then. */
  pausedUntil: Date | null;
  paused: boolean;
  lastError: string | null;
  changedAt: Date | null;
  backlog: { pending: number; held: number; delivering: number; unresolved: number; dead: number };
}
