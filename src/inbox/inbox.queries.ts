/**
 * Hot-path SQL of the inbox, hand-written so reviewers see every change.
 * Each claim query is matched by a partial index of the initial migration.
 */

export const ACCEPT_PARAMS_PER_ROW = 11;

/**
 * Insert-if-absent of `rows` events in one statement and one commit (group
 * commit). On conflict the original row is kept; only the delivery counters
 * move, and a different digest is counted, never stored. `xmax = 0` is true
 * only for a row this statement inserted. The caller never sends one identity
 * twice in a statement.
 */
export function acceptMany(rows: number): string {
  const values = Array.from({ length: rows }, (_, row) => {
    const p = (column: number) => `$${row * ACCEPT_PARAMS_PER_ROW + column}`;
    return `(${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}::jsonb, ${p(8)}, ${p(9)}, ${p(10)}::text, ${p(11)},
      CASE WHEN ${p(10)}::text = 'ignored' THEN now() END)`;
  });
  return `
  INSERT INTO webhook_inbox AS i
    (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
     payload_sha256, verified_with, status, status_reason, completed_at)
  VALUES ${values.join(',\n    ')}
  ON CONFLICT (source_scope, event_id) DO UPDATE
    SET deliveries = i.deliveries + 1,
        last_delivery_at = now(),
        digest_conflicts = i.digest_conflicts + (i.payload_sha256 <> EXCLUDED.payload_sha256)::int
  RETURNING id, source_scope, event_id, (xmax = 0) AS inserted, status, payload_sha256`;
}

/** last_error of an attempt whose worker died (or lost its transaction) before recording an outcome. */
export const WORKER_LOST = 'worker_lost';

const EVENT_COLUMNS = `id, source_scope, event_id, tenant_id, provider, endpoint_id, event_type,
  payload, attempts, last_error, received_at`;

/**
 * Opens a claim in the processing transaction: the advisory lock $1 tells
 * recovery that this claim's journal row (written next) still has a living
 * owner, and the lease becomes the server's own limit on the transaction: a
 * transaction left idle for $2 ms (its worker stalled or vanished) is ended by
 * PostgreSQL, which releases its events for another worker.
 */
export const OPEN_CLAIM = `SELECT pg_advisory_xact_lock($1), set_config('idle_in_transaction_session_timeout', $2, true)`;

/**
 * Locks up to $2 due pending events (index webhook_inbox_due) for the rest of
 * the transaction; the claim itself writes nothing. SKIP LOCKED lets any number
 * of lanes and instances claim side by side. Due by the database clock too: a
 * new row is due at its insert's now(), in microseconds, and a JS Date has no
 * finer grain than a millisecond, so a claim in the same millisecond as the
 * commit would otherwise miss the event and leave it to the next poll.
 */
export const CLAIM_DUE = `
  SELECT ${EVENT_COLUMNS} FROM webhook_inbox
   WHERE status = 'pending' AND next_attempt_at <= greatest($1::timestamptz, now())
   ORDER BY next_attempt_at
   LIMIT $2
     FOR UPDATE SKIP LOCKED`;

/** Locks these events, if still pending and free: each is then processed alone. */
export const CLAIM_IDS = `
  SELECT ${EVENT_COLUMNS} FROM webhook_inbox
   WHERE id = ANY($1::bigint[]) AND status = 'pending'
     FOR UPDATE SKIP LOCKED`;

/** The claim's journal row, committed on a connection of its own before the work starts. */
export const JOURNAL_CLAIM = `INSERT INTO inbox_claims (lock_key, worker, event_ids) VALUES ($1, $2, $3)`;

export const FORGET_CLAIM = `DELETE FROM inbox_claims WHERE lock_key = $1`;

/**
 * Ends a claim in its processing transaction: deletes its journal row and
 * writes every outcome at once. A row with a status settles the event (done,
 * ignored, quarantined); a row without one is a failed attempt: back to pending
 * at its next_attempt_at, or quarantined once the attempts reach $3.
 */
export const COMPLETE_CLAIM = `
  WITH journal AS (DELETE FROM inbox_claims WHERE lock_key = $1)
  UPDATE webhook_inbox i
     SET status = CASE WHEN v.status IS NOT NULL THEN v.status
                       WHEN i.attempts + 1 >= $3 THEN 'quarantined' ELSE 'pending' END,
         status_reason = CASE WHEN v.status IS NOT NULL THEN v.reason
                              WHEN i.attempts + 1 >= $3 THEN 'max_attempts' END,
         completed_at = CASE WHEN v.status IS NOT NULL OR i.attempts + 1 >= $3 THEN $2::timestamptz END,
         attempts = i.attempts + (v.status IS NULL)::int,
         last_error = CASE WHEN v.status IS NULL THEN v.error ELSE i.last_error END,
         next_attempt_at = CASE WHEN v.status IS NULL THEN v.next_attempt_at ELSE i.next_attempt_at END
    FROM unnest($4::bigint[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
         AS v(id, status, reason, error, next_attempt_at)
   WHERE i.id = v.id
  RETURNING i.id, i.status, i.attempts`;

/**
 * Counts the attempts that ended without an outcome, and frees them: journal
 * rows whose owner no longer holds their advisory lock (the worker died, or its
 * transaction was ended for it), and rows an older version left 'processing'
 * under an expired lease. Each event gets one attempt more, quarantined at $1.
 * SKIP LOCKED: two instances recovering at once take different rows.
 */
export const RECOVER_LOST_ATTEMPTS = `
  WITH orphaned AS (
    DELETE FROM inbox_claims c
     WHERE c.lock_key IN (SELECT lock_key FROM inbox_claims FOR UPDATE SKIP LOCKED)
       AND pg_try_advisory_xact_lock(c.lock_key)
    RETURNING c.event_ids
  ), lost AS (
    SELECT unnest(event_ids) AS id FROM orphaned
    UNION
    SELECT id FROM webhook_inbox WHERE status = 'processing' AND locked_until < $2
  )
  UPDATE webhook_inbox i
     SET attempts = i.attempts + 1,
         last_error = CASE WHEN i.status = 'processing' THEN 'lease_expired' ELSE '${WORKER_LOST}' END,
         status = CASE WHEN i.attempts + 1 >= $1 THEN 'quarantined' ELSE 'pending' END,
         status_reason = CASE WHEN i.attempts + 1 >= $1 THEN 'max_attempts' END,
         completed_at = CASE WHEN i.attempts + 1 >= $1 THEN $2::timestamptz END,
         locked_by = NULL,
         locked_until = NULL
    FROM lost
   WHERE i.id = lost.id AND i.status IN ('pending', 'processing')
  RETURNING i.id, i.event_id, i.source_scope, i.status, i.attempts`;

// ---- Admin SQL (admin module, through InboxService). Not hot path, but reviewed like it. ----

/** Columns of the admin view; `payload` is selected only for operators. */
export const ADMIN_VIEW_COLUMNS = `id, source_scope, event_id, tenant_id, provider, endpoint_id, event_type, status,
  status_reason, payload_sha256, verified_with, attempts, next_attempt_at, locked_by, locked_until, last_error,
  received_at, completed_at, deliveries, last_delivery_at, digest_conflicts, (payload IS NULL) AS payload_purged`;

/** Row lock for an admin change (same transaction as its audit row). */
export const ADMIN_LOCK = `SELECT status, (payload IS NULL) AS payload_purged FROM webhook_inbox WHERE id = $1 FOR UPDATE`;

/** Re-queue with the same identity: a fresh attempt budget, due at $2. */
export const ADMIN_REPLAY = `
  UPDATE webhook_inbox
     SET status = 'pending', status_reason = NULL, attempts = 0, next_attempt_at = $2,
         locked_by = NULL, locked_until = NULL, completed_at = NULL
   WHERE id = $1`;

/** Stops an event from being processed; a worker holding it loses its fence. */
export const ADMIN_QUARANTINE = `
  UPDATE webhook_inbox
     SET status = 'quarantined', status_reason = 'operator', locked_by = NULL, locked_until = NULL, completed_at = $2
   WHERE id = $1`;

/**
 * One bulk-replay batch: re-checks the filter on the locked rows (a row that moved
 * on meanwhile is left alone) and returns each row's status before the change.
 */
export function adminReplayBatch(filterSql: string, idsParam: string, nowParam: string): string {
  return `
  UPDATE webhook_inbox w
     SET status = 'pending', status_reason = NULL, attempts = 0, next_attempt_at = ${nowParam},
         locked_by = NULL, locked_until = NULL, completed_at = NULL
    FROM (SELECT id, status FROM webhook_inbox
           ${filterSql} AND id = ANY(${idsParam}::bigint[]) AND payload IS NOT NULL
           ORDER BY id FOR UPDATE) old
   WHERE w.id = old.id
  RETURNING w.id, old.status AS before`;
}

/**
 * Open backlog via the partial indexes (pending, processing, quarantined); never scans done rows.
 * Events being processed stay `pending` under their claim's row lock: the claim journal counts them.
 */
export const ADMIN_BACKLOG = `
  SELECT 'pending' AS status, count(*)::int AS n, min(received_at) AS oldest FROM webhook_inbox WHERE status = 'pending'
  UNION ALL
  SELECT 'processing', ((SELECT count(*) FROM webhook_inbox WHERE status = 'processing')
                         + (SELECT coalesce(sum(cardinality(event_ids)), 0) FROM inbox_claims))::int, NULL
  UNION ALL
  SELECT 'quarantined', count(*)::int, NULL FROM webhook_inbox WHERE status = 'quarantined'`;

export const ADMIN_STATS_BY_STATUS = `SELECT status, count(*)::int AS n FROM webhook_inbox GROUP BY status`;

export const ADMIN_STATS_ATTEMPTS = `
  SELECT count(*) FILTER (WHERE status = 'pending' AND attempts > 0)::int AS retrying,
         coalesce(max(attempts), 0)::int AS max_attempts
    FROM webhook_inbox WHERE status IN ('pending', 'processing', 'quarantined')`;

/** The most frequent errors of open rows, grouped by provider and type. */
export const ADMIN_STATS_FAILURES = `
  SELECT provider, event_type AS type, left(last_error, 200) AS error, count(*)::int AS n
    FROM webhook_inbox
   WHERE status IN ('pending', 'processing', 'quarantined') AND last_error IS NOT NULL
   GROUP BY 1, 2, 3 ORDER BY n DESC, 1, 2, 3 LIMIT 20`;

/** Accept-to-done percentiles of events completed since $1. */
export const ADMIN_STATS_LATENCY = `
  SELECT count(*)::int AS completed,
         percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (
           ORDER BY extract(epoch FROM completed_at - received_at)) AS p
    FROM webhook_inbox WHERE status = 'done' AND completed_at >= $1`;

// ---- Retention (maintenance role, through InboxService). Each is one bounded autocommit batch. ----

/**
 * Drops the payload of up to $2 settled events (done, ignored) received before $1;
 * identity, digest and status stay, so a resend is still answered `duplicate`.
 * Quarantined payloads stay: an operator may still replay them. The partial index
 * webhook_inbox_payload_retention holds exactly these candidates, so a batch never
 * walks past rows purged earlier. SKIP LOCKED: a row a worker or admin holds waits
 * for the next batch, and two instances purge side by side.
 */
export const PURGE_PAYLOADS = `
  UPDATE webhook_inbox SET payload = NULL
   WHERE id IN (SELECT id FROM webhook_inbox
                 WHERE payload IS NOT NULL AND status IN ('done', 'ignored') AND received_at < $1
                 ORDER BY received_at
                 LIMIT $2
                   FOR UPDATE SKIP LOCKED)`;

/**
 * Deletes up to $2 settled identities (done, ignored) received before $1, oldest
 * first (index webhook_inbox_received). Never pending or processing (work still to
 * do) nor quarantined (an operator's decision is still open).
 */
export const DELETE_IDENTITIES = `
  DELETE FROM webhook_inbox
   WHERE id IN (SELECT id FROM webhook_inbox
                 WHERE received_at < $1 AND status IN ('done', 'ignored')
                 ORDER BY received_at, id
                 LIMIT $2
                   FOR UPDATE SKIP LOCKED)`;
