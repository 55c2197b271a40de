/**
 * Hot-path SQL of the outbox, hand-written so reviewers see every change.
 * Times come from the application Clock as parameters, so tests can move time.
 */

/**
 * Claims up to $4 rows for relay $2 in one short transaction: due `pending` rows
 * (index outbox_due) and `delivering` rows whose lease expired (index
 * outbox_leased: their relay died mid-flight). SKIP LOCKED lets any number of
 * relays share the backlog. A reclaimed lease may already have reached the
 * destination, so its outcome becomes unknown. No lock outlives this statement.
 * Due by the database clock too: see the inbox CLAIM.
 */
export const CLAIM_OUTBOX = `
  WITH expired AS (
    SELECT id FROM outbox
     WHERE status = 'delivering' AND locked_until < $1
     ORDER BY locked_until
     LIMIT $4
     FOR UPDATE SKIP LOCKED
  ), due AS (
    SELECT id FROM outbox
     WHERE status = 'pending' AND next_attempt_at <= greatest($1::timestamptz, now())
     ORDER BY next_attempt_at
     LIMIT $4
     FOR UPDATE SKIP LOCKED
  ), picked AS (
    (SELECT id FROM expired UNION ALL SELECT id FROM due) LIMIT $4
  )
  UPDATE outbox o
     SET status = 'delivering',
         locked_by = $2,
         locked_until = $1::timestamptz + $3 * interval '1 millisecond',
         attempts = o.attempts + 1,
         outcome_unknown = o.outcome_unknown OR o.status = 'delivering'
    FROM picked
   WHERE o.id = picked.id
  RETURNING o.id, o.operation_key, o.destination, o.operation_type, o.tenant_id, o.payload,
            o.attempts, o.outcome_unknown, o.trace_context`;

/**
 * The attempt history (outbox_attempts), written by the statement that records
 * the outcome as one more CTE: no extra round trip, and only for attempts the
 * fence let through. A deferred entry was not sent, so it has no attempt.
 */
const HISTORY_OF_RECORDED = `history AS (
    INSERT INTO outbox_attempts
      (outbox_id, attempt, at, lease, outcome, status_code, duration_ms, outcome_query, retry_after_ms, error)
    SELECT id, attempts, $9, $8, CASE status WHEN 'pending' THEN 'retry' ELSE status END,
           status_code, duration_ms, outcome_query, retry_after_ms, CASE WHEN status <> 'delivered' THEN last_error END
      FROM recorded WHERE NOT deferred
  )`;

/**
 * Records a batch of outcomes. Fenced per row by the lease: only the relay that
 * claimed this attempt ($8, same attempts) changes anything, so a relay that lost
 * its lease cannot confirm or bury an entry. As in the inbox's FINISH_MANY, the
 * token alone implies 'delivering' (every statement that leaves it clears
 * locked_by), and a status condition would steer the plan to outbox_leased.
 */
export const RECORD_OUTCOMES = `
  WITH recorded AS (
    UPDATE outbox o
       SET status = r.status,
           attempts = o.attempts - r.deferred::int,
           next_attempt_at = COALESCE(r.next_attempt_at, o.next_attempt_at),
           last_error = r.last_error,
           last_status_code = r.status_code,
           outcome_unknown = r.outcome_unknown,
           delivered_at = CASE WHEN r.status = 'delivered' THEN $9::timestamptz ELSE o.delivered_at END,
           locked_by = NULL,
           locked_until = NULL
      FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::int[], $7::boolean[], $10::boolean[],
                  $11::int[], $12::text[], $13::int[])
        AS r(id, attempts, status, next_attempt_at, last_error, status_code, outcome_unknown, deferred,
             duration_ms, outcome_query, retry_after_ms)
     WHERE o.id = r.id
       AND o.locked_by = $8
       AND o.attempts = r.attempts
    RETURNING o.id, r.attempts, r.status, r.status_code, r.duration_ms, r.outcome_query, r.retry_after_ms, r.last_error, r.deferred
  ), ${HISTORY_OF_RECORDED}
  SELECT id FROM recorded`;

/**
 * The writer's insert, run in the caller's transaction. The operation key is the
 * uniqueness boundary of the business effect: a second event for the same change
 * inserts nothing. Multi-row: $1..$4, $6 and $7 are parallel arrays, $5 one JSON array
 * of the payloads (in a jsonb[] literal the driver would escape every quote of
 * every payload, and the server unescape it). $7, the trace contexts, is NULL when
 * tracing is off: ROWS FROM pads a shorter (here empty) function with NULLs.
 */
export const INSERT_OUTBOX = `
  INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, source_event_id, trace_context)
  SELECT * FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]),
                           jsonb_array_elements($5::jsonb), unnest($6::bigint[]), unnest($7::text[]))
  ON CONFLICT (operation_key) DO NOTHING
  RETURNING operation_key`;

// ---- Retention (maintenance role) ----

/**
 * Deletes up to $2 delivered entries older than $1, oldest first. `created_at < $1`
 * (implied, since an entry is delivered after it is created) lets the existing
 * outbox_created index drive the scan, so the relay's writes pay for no extra index.
 * Never pending, delivering, unresolved or dead: those are still someone's work.
 * The order's status, not this row, keeps a later event from repeating the effect.
 * The entry's attempt history goes with it.
 */
export const PRUNE_DELIVERED = `
  WITH gone AS (
    DELETE FROM outbox
     WHERE id IN (SELECT id FROM outbox
                   WHERE created_at < $1 AND status = 'delivered' AND delivered_at < $1
                   ORDER BY created_at, id
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
    RETURNING id
  ), history AS (
    DELETE FROM outbox_attempts WHERE outbox_id IN (SELECT id FROM gone)
  )
  SELECT count(*)::int AS n FROM gone`;

// ---- Erasure (an operator's use case in the orders module, in its transaction) ----

/**
 * Blanks the recipient of the e-mail entries among operation keys $1 (unique index
 * outbox_operation_key); one not sent yet becomes `dead` with last_error 'erased', so
 * no message goes out to an erased address. Returns every entry of the keys, e-mail or
 * not, with its source event: the inbox payloads behind them are erased too.
 */
export const ERASE_RECIPIENTS = `
  WITH entries AS (
    SELECT id, destination, source_event_id FROM outbox WHERE operation_key = ANY($1::text[]) FOR UPDATE
  ), blanked AS (
    UPDATE outbox o
       SET payload = jsonb_set(o.payload, '{to}', '""'),
           status = CASE WHEN o.status IN ('pending', 'unresolved') THEN 'dead' ELSE o.status END,
           last_error = CASE WHEN o.status IN ('pending', 'unresolved') THEN 'erased' ELSE o.last_error END
      FROM entries e
     WHERE o.id = e.id AND e.destination = 'email' AND o.payload ? 'to'
    RETURNING o.id
  )
  SELECT e.id, e.source_event_id, (b.id IS NOT NULL) AS blanked FROM entries e LEFT JOIN blanked b ON b.id = e.id`;
