import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isUniqueViolation } from '../common/database-errors';
import {
  ADVANCE_CURSOR,
  CLAIM_RUN,
  CURSOR_OF,
  CURSORS,
  FINISH_RUN,
  PRUNE_RUNS,
  RECENT_RUNS,
  RECORD_PROGRESS,
  REQUEST_RUN,
  SCHEDULE_RUN,
} from './reconciliation.queries';
import { OutcomeCounts, ReconciliationCursor, ReconciliationRun, RunStatus } from './reconciliation.types';
import { UnitOfWork } from '../database/unit-of-work';

interface RunRow {
  id: string;
  endpoint_id: string;
  requested_by: string;
  reason: string;
  dry_run: boolean;
  window_from: Date | null;
  window_to: Date | null;
  advances_cursor: boolean;
  status: RunStatus;
  position: string | null;
  listed: number;
  found_missing: number;
  accepted: number;
  outcomes: OutcomeCounts | null;
  api_calls: number;
  error: string | null;
  requested_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

function toRun(r: RunRow): ReconciliationRun {
  return {
    id: String(r.id),
    endpointId: r.endpoint_id,
    requestedBy: r.requested_by,
    reason: r.reason,
    dryRun: r.dry_run,
    windowFrom: r.window_from,
    windowTo: r.window_to,
    advancesCursor: r.advances_cursor,
    status: r.status,
    position: r.position,
    listed: r.listed,
    foundMissing: r.found_missing,
    accepted: r.accepted,
    ...countsOf(r.outcomes),
    apiCalls: r.api_calls,
    error: r.error,
    requestedAt: r.requested_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}

/** The run's answer from its stored counts; all null for a run by a version that did not store them. */
function countsOf(outcomes: OutcomeCounts | null): Pick<ReconciliationRun, 'duplicates' | 'ignored' | 'invalid' | 'byReason'> {
  if (!outcomes) return { duplicates: null, ignored: null, invalid: null, byReason: null };
  const totals: Record<string, number> = { duplicate: 0, ignored: 0, invalid: 0 };
  const byReason: Record<string, number> = {};
  for (const [key, count] of Object.entries(outcomes)) {
    const [outcome, reason] = key.split(':', 2);
    totals[outcome] = (totals[outcome] ?? 0) + count;
    if (reason) byReason[reason] = (byReason[reason] ?? 0) + count;
  }
  return { duplicates: totals.duplicate, ignored: totals.ignored, invalid: totals.invalid, byReason };
}

export interface RunProgress {
  position?: string;
  listed: number;
  foundMissing: number;
  accepted: number;
  /** The page's other outcomes, added to the run's. */
  outcomes?: OutcomeCounts;
  apiCalls: number;
}

/** The only owner of `reconciliation_cursors` and `reconciliation_runs`. */
@Injectable()
export class ReconciliationRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Retention: deletes up to `limit` finished runs that ended before `before`. */
  async pruneRuns(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(PRUNE_RUNS, [before, limit]);
    return rows[0].n;
  }

  async schedule(endpointId: string, now: Date, intervalSeconds: number): Promise<void> {
    await this.dataSource.query(SCHEDULE_RUN, [endpointId, now, intervalSeconds]);
  }

  /** In the caller's transaction (with its audit row); undefined when a run is already waiting for the endpoint. */
  async request(
    tx: UnitOfWork,
    run: { endpointId: string; requestedBy: string; reason: string; dryRun: boolean; from?: Date; to?: Date; advancesCursor: boolean },
    now: Date,
  ): Promise<string | undefined> {
    const rows: { id: string }[] = await tx.query(REQUEST_RUN, [
      run.endpointId,
      run.requestedBy,
      run.reason,
      run.dryRun,
      run.from ?? null,
      run.to ?? null,
      run.advancesCursor,
      now,
    ]);
    return rows[0] ? String(rows[0].id) : undefined;
  }

  /** The next run to execute under `lease`, or undefined (none, or another instance runs that endpoint). */
  async claim(lease: string, now: Date, leaseMs: number): Promise<ReconciliationRun | undefined> {
    try {
      const [rows]: [RunRow[], number] = await this.dataSource.query(CLAIM_RUN, [lease, now, leaseMs]);
      return rows[0] ? toRun(rows[0]) : undefined;
    } catch (error) {
      if (isUniqueViolation(error, 'reconciliation_runs_one_running')) return undefined;
      throw error;
    }
  }

  /** False when the lease was lost (another instance took the run over). */
  async progress(runId: string, lease: string, p: RunProgress, now: Date, leaseMs: number): Promise<boolean> {
    const [rows]: [unknown[], number] = await this.dataSource.query(RECORD_PROGRESS, [
      runId,
      lease,
      p.position ?? null,
      p.listed,
      p.foundMissing,
      p.accepted,
      p.apiCalls,
      now,
      leaseMs,
      JSON.stringify(p.outcomes ?? {}),
    ]);
    return rows.length === 1;
  }

  async finish(runId: string, lease: string, status: 'succeeded' | 'failed', error: string | null, now: Date): Promise<boolean> {
    const [rows]: [unknown[], number] = await this.dataSource.query(FINISH_RUN, [runId, lease, status, error, now]);
    return rows.length === 1;
  }

  /** To `cursorAt`, never past the database's now() less `overlapMs`. */
  async advanceCursor(endpointId: string, cursorAt: Date, now: Date, overlapMs: number): Promise<void> {
    await this.dataSource.query(ADVANCE_CURSOR, [endpointId, cursorAt, now, overlapMs]);
  }

  async cursor(endpointId: string): Promise<ReconciliationCursor | undefined> {
    const [row]: { cursor_at: Date; last_success_at: Date | null }[] = await this.dataSource.query(CURSOR_OF, [endpointId]);
    return row && { endpointId, cursorAt: row.cursor_at, lastSuccessAt: row.last_success_at };
  }

  async cursors(): Promise<ReconciliationCursor[]> {
    const rows: { endpoint_id: string; cursor_at: Date; last_success_at: Date | null }[] = await this.dataSource.query(CURSORS);
    return rows.map((r) => ({ endpointId: r.endpoint_id, cursorAt: r.cursor_at, lastSuccessAt: r.last_success_at }));
  }

  async recentRuns(endpointIds: string[], perEndpoint: number): Promise<ReconciliationRun[]> {
    const rows: RunRow[] = await this.dataSource.query(RECENT_RUNS, [endpointIds, perEndpoint]);
    return rows.map(toRun);
  }
}
