import { opaque } from '../database/prepared-statement';

/**
 * Hot-path SQL of the inbox, hand-written so reviewers see every change.
 * Each claim query is matched by a partial index of the initial migration.
 */

export const ACCEPT_PARAMS_PER_ROW = 18;

/**
 * A payload is stored clear (`payload` jsonb) or sealed (`payload_sealed` under
 * `payload_key_id`, see inbox-payloads.ts); both NULL once purged. Written the
 * same everywhere: the partial indexes webhook_inbox_payload_key and
 * webhook_inbox_payload_expiry are chosen only for this exact predicate.
 */
export const PAYLOAD_STORED = '(payload IS NOT NULL OR payload_sealed IS NOT NULL)';

/**
 * Insert-if-absent of `rows` events in one statement and one commit (group
 * commit). On conflict the original row is kept; only the delivery counters
 * move, and a different digest is counted, never stored (unless one side was read
 * from the provider's API, `verified_with = 'api'`: its digest is of the API's JSON,
 * never the webhook's bytes, so a difference says nothing). `xmax = 0` is true
 * only for a row this statement inserted. The caller never sends one identity
 * twice in a statement. A new row may be inserted already claimed (`processing`
 * under lease $16 until $17) by the worker of the instance that accepts it, which
 * then processes it without a claim of its own; a duplicate's row keeps its lease
 * and status. The conflict target is the old id-only constraint while it exists, then the
 * time-led identity (IdentityKeys): a conflict on either means the same event.
 */
export function acceptMany(rows: number, timeKeyed: boolean): string {
  const values = Array.from({ length: rows }, (_, row) => {
    const p = (column: number) => `$${row * ACCEPT_PARAMS_PER_ROW + column}`;
    return `(${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}::jsonb, ${p(8)}, ${p(9)}, ${p(10)}::text, ${p(11)},
      CASE WHEN ${p(10)}::text = 'ignored' THEN now() END, ${p(12)}::bytea, ${p(13)}, ${p(14)}, ${p(15)}::jsonb, ${p(16)}, ${p(17)}::timestamptz,
      ${p(18)}::timestamptz)`;
  });
  return `
  INSERT INTO webhook_inbox AS i
    (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
     payload_sha256, verified_with, status, status_reason, completed_at, payload_sealed, payload_key_id, trace_context, source_facts,
     locked_by, locked_until, identity_at)
  VALUES ${values.join(',\n    ')}
  ON CONFLICT (${timeKeyed ? 'identity_at, source_scope, event_id' : 'source_scope, event_id'}) DO UPDATE
    SET deliveries = i.deliveries + 1,
        last_delivery_at = now(),
        digest_conflicts = i.digest_conflicts + (i.payload_sha256 <> EXCLUDED.payload_sha256
                           AND i.verified_with <> 'api' AND EXCLUDED.verified_with <> 'api')::int
  RETURNING id, source_scope, event_id, (xmax = 0) AS inserted, status, payload_sha256, verified_with, received_at`;
}

/**
 * Due rows the fair claim reads per tenant, unlocked: a full claim's worth (the worker's
 * CLAIM_BATCH), so a tenant alone with due work fills a claim. A literal, not the claim's
 * limit: with a parameter here the generic plan guessed a tenth of the index per tenant,
 * looked expensive enough for JIT (70 ms), and PostgreSQL planned every claim anew instead.
 */
const CANDIDATES_PER_TENANT = 512;

const EVENT_COLUMNS = `i.id, i.source_scope, i.event_id, i.tenant_id, i.provider, i.endpoint_id, i.event_type,
  i.payload, i.payload_sealed, i.payload_key_id, i.attempts, i.received_at, i.trace_context, i.source_facts`;

/**
 * The attempt history (webhook_inbox_attempts) is written by the statement that
 * records the outcome, as one more CTE: no extra round trip, and it commits or
 * rolls back with the outcome itself. A lost lease is written by the claim that
 * takes the event over, in the name of the lease that expired.
 */
const HISTORY_OF_EXPIRED = `lost AS (
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, error)
    SELECT c.id, c.attempts, $1, e.locked_by, 'lease_expired', 'lease_expired' FROM expired e JOIN claimed c ON c.id = e.id
  )`;

/**
 * Claims up to $3 due pending rows, the tenants with due work served in turn, and up
 * to $3 rows whose lease expired (index webhook_inbox_leased) for worker $2 until
 * $1 + $4 ms. Fairness (issue 34): a loose scan of webhook_inbox_due_tenant finds each
 * tenant with pending rows (one index probe per tenant, however many rows), and each
 * tenant's due rows are read oldest first (`turn` 1, 2, ...) from the same index; the
 * claim takes every tenant's first turn, then every second one, ..., so one tenant's
 * burst takes its share of each claim and no more, and FIFO holds within a tenant. A
 * tenant alone with due work fills the claim as before. Candidates are read unlocked,
 * at most CANDIDATES_PER_TENANT per tenant, and locked in turn order up to $3 (SKIP
 * LOCKED: past the rows another instance's claim holds right now); the lock re-checks
 * that a row is still pending and due, and only the claimed rows are locked. The
 * limits the planner sees are literals or hidden (opaque): see CANDIDATES_PER_TENANT.
 * SKIP LOCKED lets any number of instances claim side by side. A
 * reclaimed lease counts as a lost attempt, so an event that kills its worker is not
 * retried forever. A new row is due at its insert's now(), in microseconds: the
 * database clock counts too, or a claim in the same millisecond as the commit (a JS
 * Date has no finer grain) would miss the event and leave it to the next poll.
 * Each claimed row comes back with its `turn`, so the worker starts every tenant's
 * first events first.
 */
export const CLAIM = `
  WITH RECURSIVE tenants AS (
    (SELECT tenant_id FROM webhook_inbox WHERE status = 'pending' ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT i.tenant_id FROM webhook_inbox i
             WHERE i.status = 'pending' AND i.tenant_id > t.tenant_id
             ORDER BY i.tenant_id LIMIT 1)
      FROM tenants t WHERE t.tenant_id IS NOT NULL
  ), candidates AS (
    SELECT d.id, d.next_attempt_at, row_number() OVER (PARTITION BY t.tenant_id ORDER BY d.next_attempt_at, d.id) AS turn
      FROM tenants t
     CROSS JOIN LATERAL (
       SELECT i.id, i.next_attempt_at FROM webhook_inbox i
        WHERE i.status = 'pending' AND i.tenant_id = t.tenant_id AND i.next_attempt_at <= greatest(${opaque(1, 'timestamptz')}, now())
        ORDER BY i.next_attempt_at
        LIMIT ${CANDIDATES_PER_TENANT}) d
     WHERE t.tenant_id IS NOT NULL
  ), due AS (
    SELECT locked.id, c.turn
      FROM (SELECT * FROM candidates ORDER BY turn, next_attempt_at LIMIT ${2 * CANDIDATES_PER_TENANT}) c
     CROSS JOIN LATERAL (
       SELECT i.id FROM webhook_inbox i
        WHERE i.id = c.id AND i.status = 'pending' AND i.next_attempt_at <= greatest(${opaque(1, 'timestamptz')}, now())
          FOR UPDATE SKIP LOCKED) locked
     LIMIT ${opaque(3, 'int')}
  ), expired AS (
    SELECT id, locked_by FROM webhook_inbox
     WHERE status = 'processing' AND locked_until < $1
     ORDER BY locked_until
     LIMIT $3
       FOR UPDATE SKIP LOCKED
  ), picked AS (
    SELECT id, turn FROM (SELECT id, turn FROM due UNION ALL SELECT id, 1 FROM expired) AS p LIMIT $3
  ), claimed AS (
    UPDATE webhook_inbox i
       SET status = 'processing',
           locked_by = $2,
           locked_until = $1::timestamptz + $4 * interval '1 millisecond',
           attempts = i.attempts + (i.status = 'processing')::int,
           last_error = CASE WHEN i.status = 'processing' THEN 'lease_expired' ELSE i.last_error END
      FROM picked p
     WHERE i.id = p.id
    RETURNING ${EVENT_COLUMNS}, p.turn
  ), ${HISTORY_OF_EXPIRED}
  SELECT * FROM claimed`;

/**
 * Fenced completion of many events at once: only rows still held by claim $5
 * change. If any of them was not (a lease was lost), expect_rows fails the
 * statement and so its transaction: the worker sends it with the COMMIT, without
 * waiting for its answer (runInTransaction). The claim token alone is
 * the fence: only a claim sets locked_by, and every statement that moves a row
 * out of 'processing' clears it. Adding `status = 'processing'` let the planner
 * read every held row through webhook_inbox_leased (and its dead entries) instead
 * of looking up the batch's ids: that doubled the statement's cost in a drain.
 */
export const FINISH_MANY = `
  WITH finished AS (
    UPDATE webhook_inbox i
       SET status = v.status, status_reason = v.reason, completed_at = $4, locked_by = NULL, locked_until = NULL
      FROM unnest(${opaque(1, 'bigint[]')}, ${opaque(2, 'text[]')}, ${opaque(3, 'text[]')}) AS v(id, status, reason)
     WHERE i.id = v.id AND i.locked_by = $5
    RETURNING i.id, i.attempts, v.status, v.reason
  ), history AS (
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, reason)
    SELECT id, attempts + 1, $4, $5, status, reason FROM finished
  )
  SELECT expect_rows(count(*), cardinality($1::bigint[]), 'lease_lost') FROM finished`;

/**
 * Fenced completion: changes the row only while claim $2 still holds the lease,
 * else fails with `lease_lost` (and, inside a transaction, rolls it back).
 */
export const FINISH = `
  WITH finished AS (
    UPDATE webhook_inbox
       SET status = $3, status_reason = $4, completed_at = $5, locked_by = NULL, locked_until = NULL
     WHERE id = $1 AND locked_by = $2 AND status = 'processing'
    RETURNING id, attempts
  ), history AS (
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, reason)
    SELECT id, attempts + 1, $5, $2, $3, $4 FROM finished
  )
  SELECT expect_rows(count(*), 1, 'lease_lost') FROM finished`;

/**
 * Records a failed attempt (fenced like FINISH): back to pending at $4, or
 * quarantined once the attempts reach $5.
 */
export const RECORD_FAILURE = `
  WITH failed AS (
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
    RETURNING id, status, status_reason, attempts
  ), history AS (
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome, reason, error)
    SELECT id, attempts, $6, $2, CASE WHEN status = 'quarantined' THEN 'quarantined' ELSE 'retry' END, status_reason, $3
      FROM failed
  )
  SELECT status, attempts FROM failed`;

/**
 * Stores confirm reads on the rows still held by claim $3, before the business
 * transaction: the record of what the provider said stands whatever follows.
 */
export const RECORD_READINGS = `
  UPDATE webhook_inbox i
     SET confirmation = v.reading
    FROM unnest($1::bigint[], $2::jsonb[]) AS v(id, reading)
   WHERE i.id = v.id AND i.locked_by = $3`;

/**
 * Hands events held by claim $4 back to pending, due at $2, without counting an
 * attempt: their confirm read had no answer or no budget yet (the reason in last_error).
 */
export const DEFER = `
  UPDATE webhook_inbox i
     SET status = 'pending', next_attempt_at = v.due, last_error = v.why, locked_by = NULL, locked_until = NULL
    FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS v(id, due, why)
   WHERE i.id = v.id AND i.locked_by = $4
  RETURNING i.id`;

/** Which of the ids $1 claim $2 still holds (after a batch's completion found a lease lost). */
export const STILL_HELD = `SELECT id FROM webhook_inbox WHERE id = ANY($1::bigint[]) AND locked_by = $2`;

/**
 * Which of the identities ($1 scopes, $2 ids, $3 identity_at keys, pairwise) are in the inbox:
 * one probe of a unique index each, the keys with a time and the NULL ones apart (`IS NOT
 * DISTINCT FROM` would not use the index).
 */
export const EXISTING_IDENTITIES = `
  SELECT i.source_scope, i.event_id
    FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS v(source_scope, event_id, identity_at)
    JOIN webhook_inbox i ON i.identity_at = v.identity_at AND i.source_scope = v.source_scope AND i.event_id = v.event_id
  UNION ALL
  SELECT i.source_scope, i.event_id
    FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS v(source_scope, event_id, identity_at)
    JOIN webhook_inbox i ON i.identity_at IS NULL AND v.identity_at IS NULL
                        AND i.source_scope = v.source_scope AND i.event_id = v.event_id`;

// ---- Retention (maintenance role). Each is one bounded autocommit batch. ----

/**
 * Drops the payload (clear or sealed) of up to $2 settled events (done, ignored) received
 * before $1; identity, digest and status stay, so a resend is still answered `duplicate`.
 * Quarantined payloads stay: an operator may still replay them. The partial index
 * webhook_inbox_payload_expiry holds exactly these candidates, so a batch never
 * walks past rows purged earlier. SKIP LOCKED: a row a worker or admin holds waits
 * for the next batch, and two instances purge side by side.
 */
export const PURGE_PAYLOADS = `
  UPDATE webhook_inbox SET payload = NULL, payload_sealed = NULL, payload_key_id = NULL
   WHERE id IN (SELECT id FROM webhook_inbox
                 WHERE ${PAYLOAD_STORED} AND status IN ('done', 'ignored') AND received_at < $1
                 ORDER BY received_at
                 LIMIT $2
                   FOR UPDATE SKIP LOCKED)`;

/**
 * Deletes up to $2 settled identities (done, ignored) received before $1, oldest
 * first (index webhook_inbox_received). Never pending or processing (work still to
 * do) nor quarantined (an operator's decision is still open). The identity's
 * attempt history goes with it.
 */
export const DELETE_IDENTITIES = deleteOldestReceived(`received_at < $1 AND status IN ('done', 'ignored')`);

/**
 * Deletes up to $2 quarantined events received before $1 and quarantined before $1
 * (RETENTION_ABANDONED_DAYS: an operator had that long to replay them), with their
 * attempt history. Once settled identities are gone, rows received before $1 are
 * only open ones, so the scan of webhook_inbox_received stays short.
 */
export const DELETE_ABANDONED = deleteOldestReceived(`received_at < $1 AND status = 'quarantined' AND completed_at < $1`);

/** One retention batch: up to $2 inbox rows matching `where`, oldest received first (webhook_inbox_received), with their attempts. */
function deleteOldestReceived(where: string): string {
  return `
  WITH gone AS (
    DELETE FROM webhook_inbox
     WHERE id IN (SELECT id FROM webhook_inbox
                   WHERE ${where}
                   ORDER BY received_at, id
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
    RETURNING id
  ), history AS (
    DELETE FROM webhook_inbox_attempts WHERE inbox_id IN (SELECT id FROM gone)
  )
  SELECT count(*)::int AS n FROM gone`;
}

// ---- Payload keys (maintenance role and admin, through InboxService) ----

/**
 * The key ids stored payloads are sealed with, by a loose scan of
 * webhook_inbox_payload_key (one index probe per distinct id, however many rows),
 * and whether clear payloads remain (`clear`). Run at every start.
 */
export const PAYLOAD_KEYS_IN_USE = `
  WITH RECURSIVE k AS (
    (SELECT payload_key_id FROM webhook_inbox WHERE ${PAYLOAD_STORED} AND payload_key_id IS NOT NULL
      ORDER BY payload_key_id LIMIT 1)
    UNION ALL
    SELECT (SELECT payload_key_id FROM webhook_inbox
             WHERE ${PAYLOAD_STORED} AND payload_key_id > k.payload_key_id
             ORDER BY payload_key_id LIMIT 1)
      FROM k WHERE k.payload_key_id IS NOT NULL
  )
  SELECT payload_key_id AS key_id FROM k WHERE payload_key_id IS NOT NULL
  UNION ALL
  SELECT NULL FROM (SELECT 1 FROM webhook_inbox WHERE ${PAYLOAD_STORED} AND payload_key_id IS NULL LIMIT 1) AS clear`;

/** Stored payloads per key id (NULL: clear), from webhook_inbox_payload_key alone. */
export const PAYLOAD_ROWS_BY_KEY = `
  SELECT payload_key_id AS key_id, count(*)::bigint AS n FROM webhook_inbox WHERE ${PAYLOAD_STORED} GROUP BY 1 ORDER BY 1`;

/** Stored payloads under one key ($1) or clear ones (`clear`), counted through webhook_inbox_payload_key. */
export function payloadRowsOf(clear: boolean): string {
  return `SELECT count(*)::bigint AS n FROM webhook_inbox WHERE ${PAYLOAD_STORED} AND ${keyIs(clear, 1)}`;
}

function keyIs(clear: boolean, param: number): string {
  return clear ? 'payload_key_id IS NULL' : `payload_key_id = $${param}`;
}

/**
 * One re-encryption batch: up to $2 rows stored under key $3 (or clear ones) after id $1,
 * in id order along webhook_inbox_payload_key (key id, id), locked until the batch's
 * commit. SKIP LOCKED: a row a worker or an operator holds is left to the next run.
 */
export function reencryptPick(clear: boolean): string {
  return `
  SELECT id, source_scope, event_id, payload::text AS payload_text, payload_sealed, payload_key_id
    FROM webhook_inbox
   WHERE ${PAYLOAD_STORED} AND ${keyIs(clear, 3)} AND id > $1
   ORDER BY id
   LIMIT $2
     FOR UPDATE SKIP LOCKED`;
}

/** Stores the batch's payloads sealed under key $3 (rows locked by reencryptPick in the same transaction). */
export const REENCRYPT_STORE = `
  UPDATE webhook_inbox w
     SET payload = NULL, payload_sealed = v.sealed, payload_key_id = $3
    FROM unnest($1::bigint[], $2::bytea[]) AS v(id, sealed)
   WHERE w.id = v.id`;
