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
