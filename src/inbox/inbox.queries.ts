/**
 * Hot-path SQL of the inbox, hand-written so reviewers see every change.
 * Each claim query is matched by a partial index of the initial migration.
 */

/**
 * Insert-if-absent in one round trip. On conflict the original row is kept; only
 * the delivery counters move, and a different digest is counted, never stored.
 * `xmax = 0` is true only for a row this statement inserted.
 */
export const ACCEPT = `
  INSERT INTO webhook_inbox AS i
    (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
     payload_sha256, verified_with, status, status_reason, completed_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11,
          CASE WHEN $10 = 'ignored' THEN now() END)
  ON CONFLICT (source_scope, event_id) DO UPDATE
    SET deliveries = i.deliveries + 1,
        last_delivery_at = now(),
        digest_conflicts = i.digest_conflicts + (i.payload_sha256 <> EXCLUDED.payload_sha256)::int
  RETURNING id, (xmax = 0) AS inserted, status, payload_sha256 = $8 AS same_digest`;

const EVENT_COLUMNS = `i.id, i.source_scope, i.event_id, i.tenant_id, i.provider, i.endpoint_id, i.event_type,
  i.payload, i.attempts, i.received_at`;

/**
 * Claims up to $3 due pending rows (index webhook_inbox_due) and up to $3 rows
 * whose lease expired (index webhook_inbox_leased) for worker $2 until $1 + $4 ms.
 * SKIP LOCKED lets any number of instances claim side by side. A reclaimed lease
 * counts as a lost attempt, so an event that kills its worker is not retried forever.
 */
export const CLAIM = `
  WITH due AS (
    SELECT id FROM webhook_inbox
     WHERE status = 'pending' AND next_attempt_at <= $1
     ORDER BY next_attempt_at
     LIMIT $3
       FOR UPDATE SKIP LOCKED
  ), expired AS (
    SELECT id FROM webhook_inbox
     WHERE status = 'processing' AND locked_until < $1
     ORDER BY locked_until
     LIMIT $3
       FOR UPDATE SKIP LOCKED
  )
  UPDATE webhook_inbox i
     SET status = 'processing',
         locked_by = $2,
         locked_until = $1::timestamptz + $4 * interval '1 millisecond',
         attempts = i.attempts + (i.status = 'processing')::int,
         last_error = CASE WHEN i.status = 'processing' THEN 'lease_expired' ELSE i.last_error END
   WHERE i.id IN (SELECT id FROM due UNION ALL SELECT id FROM expired)
  RETURNING ${EVENT_COLUMNS}`;

/**
 * Fenced completion: changes the row only while worker $2 still holds the lease.
 * Zero rows means the lease was lost and the caller must roll back.
 */
export const FINISH = `
  UPDATE webhook_inbox
     SET status = $3, status_reason = $4, completed_at = $5, locked_by = NULL, locked_until = NULL
   WHERE id = $1 AND locked_by = $2 AND status = 'processing'`;

/**
 * Records a failed attempt (fenced like FINISH): back to pending at $4, or
 * quarantined once the attempts reach $5.
 */
export const RECORD_FAILURE = `
  UPDATE webhook_inbox
     SET attempts = attempts + 1,
         last_error = $3,
         status = CASE WHEN attempts + 1 >= $5 THEN 'quarantined' ELSE 'pending' END,
         status_reason = CASE WHEN attempts + 1 >= $5 THEN 'max_attempts' END,
         completed_at = CASE WHEN attempts + 1 >= $5 THEN $6::timestamptz END,
         next_attempt_at = $4,
         locked_by = NULL,
         locked_until = NULL
   WHERE id = $1 AND locked_by = $2 AND status = 'processing'
  RETURNING status, attempts`;
