import { opaque } from '../database/prepared-statement';

/**
 * Hot-path SQL of the outbox, hand-written so reviewers see every change.
 * Times come from the application Clock as parameters, so tests can move time.
 */

/**
 * Claims for relay $2, per destination $4 (parallel to its budget $5 from the
 * destination's circuit and rate limit), in one short statement:
 * - `delivering` rows whose lease expired (index outbox_leased: their relay died
 *   mid-flight); a reclaimed lease may already have reached the destination, so its
 *   outcome becomes unknown;
 * - due `pending` rows, the tenants in turn within each destination (issue 34): a loose
 *   scan of index outbox_due_destination_tenant finds each (destination, tenant) with
 *   pending entries, each one's due rows are read oldest first, at most $6 of them (one
 *   range per destination and tenant, so a destination whose circuit is open leaves its
 *   backlog unread), and the destination's budget takes every tenant's first entry, then
 *   every second one, ...: one tenant's backlog no longer delays another's entries.
 * A due row with an earlier entry of its aggregate and destination not yet `delivered`
 * (probe of index outbox_aggregate) is held: it is not claimed but put back for $7 ms,
 * so held rows do not clog the head of the index (a delivery releases its successors
 * at once, see RECORD_OUTCOMES). Held rows come back with `held` set.
 * The tenants of $9 are passed over at the destinations of $8 (parallel arrays; usually empty):
 * a claim for the other tenants while these fill the destination's room (OutboxRelay.pendingWritten).
 * SKIP LOCKED lets any number of relays share the backlog. No lock outlives this
 * statement. Due by the database clock too: see the inbox CLAIM.
 */
export const CLAIM_OUTBOX = `
  WITH RECURSIVE budget AS (
    -- Only the arrays opaque: with its limit and lease bound hidden as well, the generic plan
    -- cost a drain of 20,000 deliveries 20-30% of its rate.
    SELECT * FROM unnest(${opaque(4, 'text[]')}, ${opaque(5, 'int[]')}) AS b(destination, n)
  ), expired AS (
    SELECT b.destination, b.n, x.id, false AS held, 0 AS src, x.at
      FROM budget b
     CROSS JOIN LATERAL (
       SELECT o.id, o.locked_until AS at FROM outbox o
        WHERE o.status = 'delivering' AND o.locked_until < $1 AND o.destination = b.destination
        ORDER BY o.locked_until
        LIMIT $6
          FOR UPDATE SKIP LOCKED) x
  ), queues AS (
    -- Every (destination, tenant) with pending entries: one probe of outbox_due_destination_tenant each.
    (SELECT destination, tenant_id FROM outbox WHERE status = 'pending' ORDER BY destination, tenant_id LIMIT 1)
    UNION ALL
    SELECT n.destination, n.tenant_id
      FROM queues k
     CROSS JOIN LATERAL (
       SELECT o.destination, o.tenant_id FROM outbox o
        WHERE o.status = 'pending' AND (o.destination, o.tenant_id) > (k.destination, k.tenant_id)
        ORDER BY o.destination, o.tenant_id LIMIT 1) n
  ), due AS (
    SELECT b.destination, b.n, x.id, x.held, 1 AS src, x.at,
           row_number() OVER (PARTITION BY b.destination, k.tenant_id, x.held ORDER BY x.at, x.id) AS turn
      FROM budget b
      JOIN queues k ON k.destination = b.destination
       AND NOT EXISTS (SELECT 1 FROM unnest(${opaque(8, 'text[]')}, ${opaque(9, 'text[]')}) AS p(destination, tenant_id)
                        WHERE p.destination = k.destination AND p.tenant_id = k.tenant_id)
     CROSS JOIN LATERAL (
       SELECT o.id, o.next_attempt_at AS at,
              o.aggregate IS NOT NULL AND EXISTS (
                SELECT 1 FROM outbox e
                 WHERE e.tenant_id = o.tenant_id AND e.aggregate = o.aggregate AND e.aggregate_seq < o.aggregate_seq
                   AND e.destination = o.destination AND e.status <> 'delivered') AS held
         FROM outbox o
        WHERE o.status = 'pending' AND o.destination = b.destination AND o.tenant_id = k.tenant_id
          AND o.next_attempt_at <= greatest($1::timestamptz, now())
        ORDER BY o.next_attempt_at
        LIMIT $6
          FOR UPDATE SKIP LOCKED) x
  ), picked AS (
    SELECT id, held FROM (
      SELECT id, held, n, row_number() OVER (PARTITION BY destination, held ORDER BY src, turn, at, id) AS rank
        FROM (SELECT *, 0 AS turn FROM expired UNION ALL SELECT * FROM due) candidate
    ) ranked
     WHERE held OR rank <= n
  )
  UPDATE outbox o
     SET status = CASE WHEN p.held THEN 'pending' ELSE 'delivering' END,
         next_attempt_at = CASE WHEN p.held THEN $1::timestamptz + $7 * interval '1 millisecond' ELSE o.next_attempt_at END,
         locked_by = CASE WHEN p.held THEN NULL ELSE $2 END,
         locked_until = CASE WHEN p.held THEN NULL ELSE $1::timestamptz + $3 * interval '1 millisecond' END,
         attempts = o.attempts + (NOT p.held)::int,
         outcome_unknown = o.outcome_unknown OR o.status = 'delivering'
    FROM picked p
   WHERE o.id = p.id
  RETURNING o.id, o.operation_key, o.destination, o.operation_type, o.tenant_id, o.payload,
            o.attempts, o.outcome_unknown, o.trace_context, o.aggregate, p.held`;

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
 * A delivered entry of an aggregate releases the entries held behind it (`released`:
 * due now instead of at their hold's end); a row a claim has locked is skipped and
 * waits for its hold to end, which only delays it. The later entries are found through
 * their aggregate (index outbox_aggregate: a few rows); the other conditions are kept
 * out of the index's reach (`IS TRUE`) because through outbox_due_destination_tenant
 * `next_attempt_at > $9` matched every entry written since the round began (its $9):
 * thousands during a backlog, for each delivered entry, the relay's largest cost.
 */
export const RECORD_OUTCOMES = `
  WITH released AS (
    UPDATE outbox s
       SET next_attempt_at = $9
     WHERE s.id IN (
       SELECT n.id
         FROM unnest(${opaque(1, 'bigint[]')}, ${opaque(3, 'text[]')}) AS r(id, status)
         JOIN outbox d ON d.id = r.id
         JOIN outbox n ON n.tenant_id = d.tenant_id AND n.aggregate = d.aggregate AND n.aggregate_seq > d.aggregate_seq
        WHERE r.status = 'delivered' AND d.aggregate IS NOT NULL AND d.locked_by = $8
          AND (n.destination = d.destination AND n.status = 'pending' AND n.next_attempt_at > $9) IS TRUE
          FOR UPDATE OF n SKIP LOCKED)
  ), recorded AS (
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
      FROM unnest(${opaque(1, 'bigint[]')}, ${opaque(2, 'int[]')}, ${opaque(3, 'text[]')}, ${opaque(4, 'timestamptz[]')},
                  ${opaque(5, 'text[]')}, ${opaque(6, 'int[]')}, ${opaque(7, 'boolean[]')}, ${opaque(10, 'boolean[]')},
                  ${opaque(11, 'int[]')}, ${opaque(12, 'text[]')}, ${opaque(13, 'int[]')})
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
 * inserts nothing. Multi-row: $1..$4 and $6..$9 are parallel arrays, $5 one JSON array
 * of the payloads (in a jsonb[] literal the driver would escape every quote of
 * every payload, and the server unescape it). $8, the trace contexts, is NULL when
 * tracing is off, and so is $9 without a hand-over: ROWS FROM pads a shorter (here
 * empty) function with NULLs.
 * An entry with an aggregate ($7) takes the next sequence numbers of it, in array
 * order (index outbox_aggregate). The caller holds the aggregate's lock (the order
 * row), so the numbers follow the order of the changes; a writer without it that
 * races another fails on the unique index instead of taking the same number.
 * A skipped duplicate leaves a gap, which is harmless: only the order counts.
 *
 * Hand-over: an entry the writer offers ($9: its destination admitted at once, and
 * no entry of its aggregate and destination before it in this insert) is committed
 * already claimed (`delivering`, first attempt) under the local relay's lease $10
 * until $11, as the claim would leave it, unless an entry of its aggregate and
 * destination not yet `delivered` is in the table: that one the claim holds back, so
 * it stays `pending` for it. The probe is a scalar sub-select, one index probe per
 * offered row (an EXISTS may be planned as one scan of the whole table), and runs
 * only for those.
 */
export const INSERT_OUTBOX = `
  INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, source_event_id, aggregate, aggregate_seq, trace_context,
                      status, attempts, locked_by, locked_until)
  SELECT h.operation_key, h.destination, h.operation_type, h.tenant_id, h.payload, h.source_event_id, h.aggregate, h.aggregate_seq, h.trace_context,
         CASE WHEN h.handed THEN 'delivering' ELSE 'pending' END, h.handed::int,
         CASE WHEN h.handed THEN $10 END, CASE WHEN h.handed THEN $11::timestamptz END
    FROM (
      SELECT v.operation_key, v.destination, v.operation_type, v.tenant_id, v.payload, v.source_event_id, v.aggregate, v.trace_context,
             CASE WHEN v.aggregate IS NOT NULL THEN
               coalesce((SELECT max(e.aggregate_seq) FROM outbox e WHERE e.tenant_id = v.tenant_id AND e.aggregate = v.aggregate), 0)
               + row_number() OVER (PARTITION BY v.tenant_id, v.aggregate ORDER BY v.n)
             END AS aggregate_seq,
             coalesce(v.offered, false) AND (v.aggregate IS NULL OR (
               SELECT 1 FROM outbox e
                WHERE e.tenant_id = v.tenant_id AND e.aggregate = v.aggregate
                  AND e.destination = v.destination AND e.status <> 'delivered' LIMIT 1) IS NULL) AS handed
        FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]),
                        jsonb_array_elements($5::jsonb), unnest($6::bigint[]), unnest($7::text[]), unnest($8::text[]),
                        unnest($9::boolean[])) WITH ORDINALITY
          AS v(operation_key, destination, operation_type, tenant_id, payload, source_event_id, aggregate, trace_context, offered, n)
    ) h
  ON CONFLICT (operation_key) DO NOTHING
  RETURNING operation_key`;

/**
 * The entries this transaction committed handed over under lease $1, read just before its
 * COMMIT (in the same round trip): what a rolled-back savepoint undid is not among them.
 * The same columns as the claim returns. Index outbox_leased: only entries in flight.
 */
export const HANDED_OUTBOX = `
  SELECT id, operation_key, destination, operation_type, tenant_id, payload, attempts, outcome_unknown, trace_context, aggregate, false AS held
    FROM outbox
   WHERE status = 'delivering' AND locked_by = $1`;

// ---- Destination state (circuit, pause, rate limit), shared by every relay ----

export const ENSURE_DESTINATIONS = `
  INSERT INTO outbox_destinations (destination) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`;

export const DESTINATION_STATE_COLUMNS = `destination, circuit, failures, retry_at, probe_until, paused_until,
  tokens, tokens_at, last_error, changed_at, version`;

export const READ_DESTINATIONS = `SELECT ${DESTINATION_STATE_COLUMNS} FROM outbox_destinations WHERE destination = ANY(${opaque(1, 'text[]')}::text[])`;

/** Optimistic: changes the row only if nobody wrote it since it was read at version $11. */
export const WRITE_DESTINATION = `
  UPDATE outbox_destinations
     SET circuit = $2, failures = $3, retry_at = $4, probe_until = $5, paused_until = $6,
         tokens = $7, tokens_at = $8, last_error = $9, changed_at = $10, version = version + 1
   WHERE destination = $1 AND version = $11`;

// ---- Retention (maintenance role) ----

/**
 * Deletes up to $2 delivered entries older than $1, oldest first. `created_at < $1`
 * (implied, since an entry is delivered after it is created) lets the existing
 * outbox_created index drive the scan, so the relay's writes pay for no extra index.
 * Never pending, delivering, unresolved or dead: those are still someone's work.
 * The order's status, not this row, keeps a later event from repeating the effect.
 * The entry's attempt history goes with it.
 */
export const PRUNE_DELIVERED = pruneOldestCreated(`o.created_at < $1 AND o.status = 'delivered' AND o.delivered_at < $1`);

/**
 * Deletes up to $2 dead or unresolved entries created and last tried before $1
 * (RETENTION_ABANDONED_DAYS: an operator had that long to retry or resolve them), with
 * their attempt history. Last tried, too: an entry held back for months behind an earlier
 * one of its order may die only now. Never one that still holds a later entry of its
 * aggregate back: deleting it would release an operation the operator has not decided on.
 */
export const PRUNE_ABANDONED = pruneOldestCreated(`o.created_at < $1 AND o.status IN ('dead', 'unresolved')
                     AND NOT EXISTS (SELECT 1 FROM outbox_attempts a WHERE a.outbox_id = o.id AND a.at >= $1)
                     AND NOT EXISTS (SELECT 1 FROM outbox n
                                      WHERE o.aggregate IS NOT NULL AND n.tenant_id = o.tenant_id AND n.aggregate = o.aggregate
                                        AND n.aggregate_seq > o.aggregate_seq AND n.status IN ('pending', 'delivering'))`);

/** One retention batch: up to $2 entries `o` matching `where`, oldest created first (outbox_created), with their attempts. */
function pruneOldestCreated(where: string): string {
  return `
  WITH gone AS (
    DELETE FROM outbox
     WHERE id IN (SELECT o.id FROM outbox o
                   WHERE ${where}
                   ORDER BY o.created_at, o.id
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
    RETURNING id
  ), history AS (
    DELETE FROM outbox_attempts WHERE outbox_id IN (SELECT id FROM gone)
  )
  SELECT count(*)::int AS n FROM gone`;
}

// ---- Erasure (an operator's use case in the orders module, in its transaction) ----

/** Which of the entries $1 a relay holds lost their recipient to an erasure (ERASE_RECIPIENTS) since it claimed them. */
export const ERASED_AMONG = `
  SELECT id FROM outbox WHERE id = ANY($1::bigint[]) AND destination = 'email' AND payload->>'to' = ''`;

/**
 * Blanks the recipient of the e-mail entries among operation keys $1 (unique index
 * outbox_operation_key); one not sent yet becomes `dead` with last_error 'erased' (a dead
 * one too), so no later attempt or operator's retry sends it (the retry is refused from the
 * blank recipient, ADMIN_OUTBOX_LOCK). One a relay holds right now (`delivering`) keeps its
 * lease: its outcome and history are recorded as they happen, and a later attempt finds no
 * recipient. That relay re-reads the recipients it holds unsent on the erasure's notice
 * (OutboxRelay.recheckErasures); a request it has already started still goes out (operations.md).
 * Returns every entry of the keys, e-mail or not, with its source event: the inbox payloads
 * behind them are erased too.
 */
export const ERASE_RECIPIENTS = `
  WITH entries AS (
    SELECT id, destination, source_event_id FROM outbox WHERE operation_key = ANY($1::text[]) FOR UPDATE
  ), blanked AS (
    UPDATE outbox o
       SET payload = jsonb_set(o.payload, '{to}', '""'),
           status = CASE WHEN o.status IN ('pending', 'unresolved') THEN 'dead' ELSE o.status END,
           last_error = CASE WHEN o.status IN ('pending', 'unresolved', 'dead') THEN 'erased' ELSE o.last_error END
      FROM entries e
     WHERE o.id = e.id AND e.destination = 'email' AND o.payload ? 'to'
    RETURNING o.id
  )
  SELECT e.id, e.source_event_id, (b.id IS NOT NULL) AS blanked FROM entries e LEFT JOIN blanked b ON b.id = e.id`;
