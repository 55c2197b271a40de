/** The NOTIFY channel that wakes the relays: after new entries or a re-queue commit, before the next poll. */
export const OUTBOX_CHANNEL = 'outbox';

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
  payload?: unknown;
}

export interface OutboxBacklog {
  pending: number;
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
