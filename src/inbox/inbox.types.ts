export type InboxStatus = 'pending' | 'processing' | 'done' | 'ignored' | 'quarantined';

export interface AcceptRequest {
  sourceScope: string;
  eventId: string;
  tenantId: string;
  provider: string;
  endpointId: string;
  eventType: string;
  /** The verified body as received (JSON text): stored without re-serialising in Node. */
  payloadJson: string;
  payloadSha256: string;
  verifiedWith: string;
  /** `ignored` for a verified event this endpoint does not act on. */
  status: 'pending' | 'ignored';
  statusReason?: string;
}

export interface AcceptResult {
  /** `accepted`: this request created the row; `duplicate`: the identity was already there. */
  outcome: 'accepted' | 'duplicate';
  id: string;
  status: InboxStatus;
  /** The identity was known with a different payload digest (the original is kept). */
  digestConflict: boolean;
}

/** One claimed event as a handler sees it. */
export interface InboxEvent {
  /** The inbox row id. */
  id: string;
  sourceScope: string;
  eventId: string;
  tenantId: string;
  provider: string;
  endpointId: string;
  eventType: string;
  /** The verified body, parsed. */
  payload: any;
  /** Failed attempts before this one. */
  attempts: number;
  receivedAt: Date;
}

/**
 * What a handler decided. Throwing `TransientError` (or any error that is not a
 * `PermanentError`) retries with backoff; throwing `PermanentError` quarantines.
 */
export type HandlerOutcome = { kind: 'done' } | { kind: 'quarantine'; reason: string };

export type WebhookEventHandler = (event: InboxEvent, tx: import('typeorm').EntityManager) => Promise<HandlerOutcome>;
