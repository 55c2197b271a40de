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
  accepted: number;
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

/** What a run did with one event it listed. */
export type ReconciledOutcome = 'present' | 'accepted' | 'ignored' | 'duplicate' | 'would_accept' | 'redelivery_requested' | 'invalid';
