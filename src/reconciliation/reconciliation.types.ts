export type RunStatus = 'requested' | 'running' | 'succeeded' | 'failed';

/** One reconciliation run of one endpoint, as stored and as the admin API shows it. */
export interface ReconciliationRun {
  id: string;
  endpointId: string;
  /** `schedule`, or the operator's token name. */
  requestedBy: string;
  reason: string;
  dryRun: boolean;
  /** Explicit window of an operator's run; null: from the cursor to the run's start. */
  windowFrom: Date | null;
  windowTo: Date | null;
  advancesCursor: boolean;
  status: RunStatus;
  /** Where a resumed run continues (the provider's paging position). */
  position: string | null;
  listed: number;
  foundMissing: number;
  /** Of those found missing, accepted for processing. */
  accepted: number;
  /** Of those found missing, already taken by a webhook meanwhile; null: a run by an older version, which did not count them. */
  duplicates: number | null;
  /** Stored as `ignored` (the endpoint does not act on them); null as for `duplicates`. */
  ignored: number | null;
  /** Not storable (e.g. `unsupported_json`); null as for `duplicates`. */
  invalid: number | null;
  /** The ignored and invalid ones by reason (`unexpected_source`, `event_type_not_accepted`, `unsupported_json`, ...). */
  byReason: Record<string, number> | null;
  apiCalls: number;
  error: string | null;
  requestedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface ReconciliationCursor {
  endpointId: string;
  cursorAt: Date;
  lastSuccessAt: Date | null;
}

/**
 * What the acceptance path did with a run's missing events besides accepting
 * them, as stored in `reconciliation_runs.outcomes`: `duplicate`,
 * `ignored:<reason>`, `invalid:<reason>` to their counts.
 */
export type OutcomeCounts = Record<string, number>;

/** What a run did with one event it listed. */
export type ReconciledOutcome =
  'present' | 'accepted' | 'ignored' | 'duplicate' | 'would_accept' | 'redelivery_requested' | 'redelivery_refused' | 'invalid';
