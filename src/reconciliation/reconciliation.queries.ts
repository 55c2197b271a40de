/** SQL of the reconciliation tables (cursors and runs), owned by ReconciliationRepository. */

export const RUN_COLUMNS = `id, endpoint_id, requested_by, reason, dry_run, window_from, window_to, advances_cursor, status,
  position, listed, found_missing, accepted, outcomes, api_calls, error, requested_at, started_at, finished_at`;

/**
 * A scheduled run of endpoint $1, unless one is waiting or running, or one that moves the
 * cursor was requested less than $3 seconds before $2: an operator's dry run or one-off window
 * moves nothing, so it neither postpones the schedule nor, requested often, stops it. One
 * requested after $2 (by a clock that had jumped ahead, corrected since) does not count either:
 * the schedule would wait out the jump. The partial unique index on waiting runs absorbs two
 * instances scheduling at once.
 *
 * When the endpoint's last run that moves the cursor was a scheduled one that failed after
 * storing pages of its own, this one resumes it: the same window's end (the failed run's start,
 * or the end it resumed) and its paging position. So a history too long for one run (calls that
 * keep failing deep in it) is still gone through page by page, not listed again from the newest
 * page every time. Its success moves the cursor as the failed run's would have; the next run
 * covers what came since. A resumed run that fails before a page of its own (listed 0) is not
 * resumed again: the next starts afresh.
 */
export const SCHEDULE_RUN = `
  INSERT INTO reconciliation_runs (endpoint_id, requested_by, reason, advances_cursor, requested_at, window_to, position)
  SELECT $1, 'schedule', CASE WHEN failed.id IS NULL THEN 'interval' ELSE 'resume' END, true, $2, failed.window_end, failed.position
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
      SELECT last.id, coalesce(last.window_to, last.started_at) AS window_end, last.position FROM (
        SELECT r.* FROM reconciliation_runs r
         WHERE r.endpoint_id = $1 AND r.advances_cursor AND NOT r.dry_run AND r.status IN ('succeeded', 'failed')
         ORDER BY r.id DESC LIMIT 1) last
       WHERE last.requested_by = 'schedule' AND last.status = 'failed' AND last.window_from IS NULL
         AND last.position IS NOT NULL AND last.listed > 0 AND last.started_at IS NOT NULL
    ) failed ON true
   WHERE NOT EXISTS (
     SELECT 1 FROM reconciliation_runs
      WHERE endpoint_id = $1
        AND (status IN ('requested', 'running')
             OR (advances_cursor AND NOT dry_run AND requested_at > $2::timestamptz - $3 * interval '1 second'
                 AND requested_at <= $2::timestamptz)))
  ON CONFLICT DO NOTHING`;

/** An operator's run (in the audit's transaction); nothing when one is already waiting for the endpoint. */
export const REQUEST_RUN = `
  INSERT INTO reconciliation_runs (endpoint_id, requested_by, reason, dry_run, window_from, window_to, advances_cursor, requested_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT DO NOTHING
  RETURNING id`;

/**
 * Claims the oldest waiting run whose endpoint has none running, or a run whose
 * lease expired (its instance died: it resumes from its position). The partial
 * unique index on running runs is the guarantee that two instances never run one
 * endpoint at once; a claim that would break it fails and the caller skips it.
 */
export const CLAIM_RUN = `
  UPDATE reconciliation_runs r
     SET status = 'running', locked_by = $1, locked_until = $2::timestamptz + $3 * interval '1 millisecond',
         started_at = coalesce(r.started_at, $2)
   WHERE r.id = (
     SELECT w.id FROM reconciliation_runs w
      WHERE (w.status = 'requested'
             AND NOT EXISTS (SELECT 1 FROM reconciliation_runs x WHERE x.endpoint_id = w.endpoint_id AND x.status = 'running'))
         OR (w.status = 'running' AND w.locked_until < $2)
      ORDER BY w.id
      LIMIT 1
        FOR UPDATE SKIP LOCKED)
  RETURNING ${RUN_COLUMNS}`;

/**
 * Stores a page's progress and renews the lease, fenced by it; no row: the lease was lost.
 * `outcomes` adds the page's counts ($10, a flat object of counts) key by key.
 */
export const RECORD_PROGRESS = `
  UPDATE reconciliation_runs
     SET position = coalesce($3, position), listed = listed + $4, found_missing = found_missing + $5,
         accepted = accepted + $6, api_calls = api_calls + $7,
         outcomes = (SELECT coalesce(jsonb_object_agg(key, total), '{}')
                       FROM (SELECT key, sum(value::bigint) AS total
                               FROM (SELECT * FROM jsonb_each_text(coalesce(outcomes, '{}'))
                                     UNION ALL SELECT * FROM jsonb_each_text($10::jsonb)) counts
                              GROUP BY key) totals),
         locked_until = $8::timestamptz + $9 * interval '1 millisecond'
   WHERE id = $1 AND locked_by = $2 AND status = 'running'
  RETURNING id`;

/** Ends a run, fenced by its lease. */
export const FINISH_RUN = `
  UPDATE reconciliation_runs
     SET status = $3, error = $4, finished_at = $5, locked_by = NULL, locked_until = NULL
   WHERE id = $1 AND locked_by = $2 AND status = 'running'
  RETURNING id`;

/**
 * Moves the endpoint's cursor forward only, to $2 but never past the database's now() less $4 ms
 * (the runs' overlap): the window's end is this instance's clock, and one that jumped ahead for a
 * run would otherwise set the cursor past events not yet listed, for good.
 */
export const ADVANCE_CURSOR = `
  INSERT INTO reconciliation_cursors AS c (endpoint_id, cursor_at, last_success_at, updated_at)
  VALUES ($1, LEAST($2::timestamptz, now() - $4 * interval '1 millisecond'), $3, $3)
  ON CONFLICT (endpoint_id) DO UPDATE
    SET cursor_at = GREATEST(c.cursor_at, EXCLUDED.cursor_at), last_success_at = EXCLUDED.last_success_at, updated_at = EXCLUDED.updated_at`;

export const CURSOR_OF = `SELECT cursor_at, last_success_at FROM reconciliation_cursors WHERE endpoint_id = $1`;

export const CURSORS = `SELECT endpoint_id, cursor_at, last_success_at FROM reconciliation_cursors`;

/** The latest runs of each endpoint, newest first (index reconciliation_runs_endpoint). */
export const RECENT_RUNS = `
  SELECT r.* FROM unnest($1::text[]) AS e(endpoint_id)
   CROSS JOIN LATERAL (
     SELECT ${RUN_COLUMNS} FROM reconciliation_runs WHERE endpoint_id = e.endpoint_id ORDER BY id DESC LIMIT $2
   ) r`;

/**
 * Retention: up to $2 finished runs (any status but requested and running) that ended
 * before $1, oldest first. A small table (a run per endpoint and schedule tick): its
 * primary key order is its time order.
 */
export const PRUNE_RUNS = `
  WITH gone AS (
    DELETE FROM reconciliation_runs
     WHERE id IN (SELECT id FROM reconciliation_runs
                   WHERE status NOT IN ('requested', 'running') AND coalesce(finished_at, requested_at) < $1
                   ORDER BY id
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
    RETURNING id
  )
  SELECT count(*)::int AS n FROM gone`;
