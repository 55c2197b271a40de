import { opaque } from '../database/prepared-statement';

/**
 * Hot-path SQL of the inbox, hand-written so reviewers see every change.
 * Each claim query is matched by a partial index of the initial migration.
 */

export const ACCEPT_PARAMS_PER_ROW = 18;

/**
 * A legacy row (stored before payloads moved to days, payload_day NULL) holds its
 * payload clear (`payload` jsonb) or sealed (`payload_sealed` under `payload_key_id`,
 * see inbox-payloads.ts); both NULL once purged. Written the same everywhere: the
 * partial indexes webhook_inbox_payload_key and webhook_inbox_payload_expiry are
 * chosen only for this exact predicate. A new row has none there.
 */
export const PAYLOAD_STORED = '(payload IS NOT NULL OR payload_sealed IS NOT NULL)';

/** The UTC day a payload stored now belongs to: its partition of webhook_inbox_payloads. */
export const PAYLOAD_TODAY = `(now() AT TIME ZONE 'UTC')::date`;

/** Open rows keep their payload when their day is forgotten (index webhook_inbox_open). */
export const OPEN_STATUSES = `('pending', 'processing', 'quarantined')`;

/**
 * The payload row of inbox row `row` (an alias or the table name), as `alias`: the
 * join on (day, inbox_id) touches the one partition of the row's payload_day.
 */
export function dayPayloadOf(row: string, alias = 'wp'): string {
  return `webhook_inbox_payloads ${alias} WHERE ${alias}.day = ${row}.payload_day AND ${alias}.inbox_id = ${row}.id`;
}

/** Whether inbox row `row` still has a payload, legacy (in the row) or in its day. */
export function payloadKept(row: string): string {
  return `(${row}.payload IS NOT NULL OR ${row}.payload_sealed IS NOT NULL OR EXISTS (SELECT 1 FROM ${dayPayloadOf(row)}))`;
}

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
 * time-led identity (IdentityKeys): a conflict on either means the same event. The payload
 * goes to today's partition of webhook_inbox_payloads, in the same statement and only for
 * the rows it inserted (`inserted`): a duplicate writes none.
 */
export function acceptMany(rows: number, timeKeyed: boolean): string {
  const param = (row: number) => (column: number) => `$${row * ACCEPT_PARAMS_PER_ROW + column}`;
  const values = Array.from({ length: rows }, (_, row) => {
    const p = param(row);
    return `(${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${PAYLOAD_TODAY}, ${p(8)}, ${p(9)}, ${p(10)}::text, ${p(11)},
      CASE WHEN ${p(10)}::text = 'ignored' THEN now() END, ${p(14)}, ${p(15)}::jsonb, ${p(16)}, ${p(17)}::timestamptz,
      ${p(18)}::timestamptz)`;
  });
  // Parameters 7, 12 and 13 (the stored payload) are the payload row's.
  const payloads = Array.from({ length: rows }, (_, row) => {
    const p = param(row);
    return `(${p(1)}, ${p(2)}, ${p(7)}::jsonb, ${p(12)}::bytea, ${p(13)}::text)`;
  });
  return `
  WITH accepted AS (
  INSERT INTO webhook_inbox AS i
    (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload_day,
     payload_sha256, verified_with, status, status_reason, completed_at, trace_context, source_facts,
     locked_by, locked_until, identity_at)
  VALUES ${values.join(',\n    ')}
  ON CONFLICT (${timeKeyed ? 'identity_at, source_scope, event_id' : 'source_scope, event_id'}) DO UPDATE
    SET deliveries = i.deliveries + 1,
        last_delivery_at = now(),
        digest_conflicts = i.digest_conflicts + (i.payload_sha256 <> EXCLUDED.payload_sha256
                           AND i.verified_with <> 'api' AND EXCLUDED.verified_with <> 'api')::int
  RETURNING id, source_scope, event_id, (xmax = 0) AS inserted, status, payload_sha256, verified_with, received_at, payload_day
  ), payloads AS (
    INSERT INTO webhook_inbox_payloads (day, inbox_id, payload, payload_sealed, payload_key_id)
    SELECT a.payload_day, a.id, v.payload, v.sealed, v.key_id
      FROM accepted a
      JOIN (VALUES ${payloads.join(',\n      ')}) AS v(source_scope, event_id, payload, sealed, key_id)
        ON v.source_scope = a.source_scope AND v.event_id = a.event_id
     WHERE a.inserted
  )
  SELECT id, source_scope, event_id, inserted, status, payload_sha256, verified_with, received_at FROM accepted`;
}

/**
 * Due rows the fair claim reads per tenant, unlocked: a full claim's worth (the worker's
 * CLAIM_BATCH), so a tenant alone with due work fills a claim. A literal, not the claim's
 * limit: with a parameter here the generic plan guessed a tenth of the index per tenant,
 * looked expensive enough for JIT (70 ms), and PostgreSQL planned every claim anew instead.
 */
const CANDIDATES_PER_TENANT = 512;

const EVENT_COLUMNS = `i.id, i.source_scope, i.event_id, i.tenant_id, i.provider, i.endpoint_id, i.event_type,
  i.payload AS row_payload, i.payload_sealed AS row_payload_sealed, i.payload_key_id AS row_payload_key_id, i.payload_day,
  i.attempts, i.received_at, i.trace_context, i.source_facts`;

/**
 * The claimed rows `claimed` with their payload: from their day, else a legacy row's own
 * columns. A lateral probe per row (LIMIT 1 keeps it one: as a join the planner hashed every
 * partition), each pruned at run time to the row's one partition. `payload_moved`: the row
 * names a day that no longer holds its payload, i.e. retention was carrying it to today as
 * the claim read it (retried, never quarantined as missing).
 */
const WITH_PAYLOADS = `
  SELECT c.*, coalesce(wp.payload, c.row_payload) AS payload, coalesce(wp.payload_sealed, c.row_payload_sealed) AS payload_sealed,
         coalesce(wp.payload_key_id, c.row_payload_key_id) AS payload_key_id,
         (c.payload_day IS NOT NULL AND wp.inbox_id IS NULL) AS payload_moved
    FROM claimed c LEFT JOIN LATERAL (SELECT wp.* FROM ${dayPayloadOf('c')} LIMIT 1) wp ON true`;

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

const CANDIDATES = `candidates AS (
    SELECT d.id, d.next_attempt_at, row_number() OVER (PARTITION BY t.tenant_id ORDER BY d.next_attempt_at, d.id) AS turn
      FROM tenants t
     CROSS JOIN LATERAL (
       SELECT i.id, i.next_attempt_at FROM webhook_inbox i
        WHERE i.status = 'pending' AND i.tenant_id = t.tenant_id AND i.next_attempt_at <= greatest(${opaque(1, 'timestamptz')}, now())
        ORDER BY i.next_attempt_at
        LIMIT ${CANDIDATES_PER_TENANT}) d
     WHERE t.tenant_id IS NOT NULL
  )`;

/**
 * The events in `processing` per tenant and endpoint, every instance's (index webhook_inbox_leased),
 * as a CTE `in_flight`; IN_FLIGHT_OF(l): those of limit row `l` (its `kind`, 'tenant' or 'endpoint',
 * and `name`). One pass however many keys have limits (src/inbox/worker-limits.ts).
 */
export const IN_FLIGHT = `in_flight AS (
    SELECT tenant_id, endpoint_id, count(*)::int AS n FROM webhook_inbox WHERE status = 'processing' GROUP BY tenant_id, endpoint_id
  )`;
export const IN_FLIGHT_OF = (l: string) =>
  `(SELECT coalesce(sum(f.n), 0)::int FROM in_flight f WHERE (CASE ${l}.kind WHEN 'tenant' THEN f.tenant_id ELSE f.endpoint_id END) = ${l}.name)`;

/**
 * The claim's limits (issue 34, src/inbox/worker-limits.ts): $5 kinds ('tenant' or
 * 'endpoint'), $6 names, $7 concurrency (NULL: none), $8 tokens of the rate (NULL: none).
 * A key's budget in this claim is the smaller of its tokens and its concurrency less its
 * events in `processing` now, on every instance (the caller holds the keys' bucket rows
 * locked, so no other claim changes that count meanwhile; IN_FLIGHT). A tenant with no budget is
 * skipped without reading its rows. An endpoint's budget cuts its rows out of its tenant's
 * candidates, which are that tenant's CANDIDATES_PER_TENANT oldest due rows: an endpoint
 * held back with a deeper backlog than that holds its tenant's other endpoints back too,
 * until its backlog is paced through (a tenant's endpoints share its FIFO).
 */
const LIMITED_CANDIDATES = `${IN_FLIGHT}, limits AS (
    SELECT l.kind, l.name,
           greatest(0, least(coalesce(l.tokens, ${CANDIDATES_PER_TENANT}),
                             coalesce(l.concurrency - ${IN_FLIGHT_OF('l')}, ${CANDIDATES_PER_TENANT}))) AS budget
      FROM unnest(${opaque(5, 'text[]')}, ${opaque(6, 'text[]')}, ${opaque(7, 'int[]')}, ${opaque(8, 'int[]')}) AS l(kind, name, concurrency, tokens)
  ), candidates AS (
    SELECT w.id, w.next_attempt_at, w.turn
      FROM (SELECT p.id, p.next_attempt_at, p.tenant_id,
                   row_number() OVER (PARTITION BY p.tenant_id ORDER BY p.next_attempt_at, p.id) AS turn
              FROM (SELECT d.id, d.next_attempt_at, d.endpoint_id, t.tenant_id,
                           row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS endpoint_turn
                      FROM tenants t
                     CROSS JOIN LATERAL (
                       SELECT i.id, i.next_attempt_at, i.endpoint_id FROM webhook_inbox i
                        WHERE i.status = 'pending' AND i.tenant_id = t.tenant_id
                          AND i.next_attempt_at <= greatest(${opaque(1, 'timestamptz')}, now())
                        ORDER BY i.next_attempt_at
                        LIMIT (SELECT CASE WHEN coalesce(min(budget), 1) > 0 THEN ${CANDIDATES_PER_TENANT} ELSE 0 END
                                 FROM limits WHERE kind = 'tenant' AND name = t.tenant_id)) d
                     WHERE t.tenant_id IS NOT NULL) p
              LEFT JOIN limits e ON e.kind = 'endpoint' AND e.name = p.endpoint_id
             WHERE p.endpoint_turn <= coalesce(e.budget, p.endpoint_turn)) w
      LEFT JOIN limits tl ON tl.kind = 'tenant' AND tl.name = w.tenant_id
     WHERE w.turn <= coalesce(tl.budget, w.turn)
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
 * SKIP LOCKED lets any number of instances claim side by side. Expired leases come first
 * (the oldest work, and a crashed worker's rows hold their keys' places under a limit): after
 * the due rows, a claim they filled would never reach them while a backlog lasts. A
 * reclaimed lease counts as a lost attempt, so an event that kills its worker is not
 * retried forever. A new row is due at its insert's now(), in microseconds: the
 * database clock counts too, or a claim in the same millisecond as the commit (a JS
 * Date has no finer grain) would miss the event and leave it to the next poll.
 * Each claimed row comes back with its `turn`, so the worker starts every tenant's
 * first events first.
 */
export const CLAIM = claimStatement(false);

/** CLAIM within the tenants' and endpoints' limits (LIMITED_CANDIDATES), for a worker that has some (src/inbox/worker-limits.ts). */
export const LIMITED_CLAIM = claimStatement(true);

function claimStatement(limited: boolean): string {
  return `
  WITH RECURSIVE tenants AS (
    (SELECT tenant_id FROM webhook_inbox WHERE status = 'pending' ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT i.tenant_id FROM webhook_inbox i
             WHERE i.status = 'pending' AND i.tenant_id > t.tenant_id
             ORDER BY i.tenant_id LIMIT 1)
      FROM tenants t WHERE t.tenant_id IS NOT NULL
  ), ${limited ? LIMITED_CANDIDATES : CANDIDATES}, due AS (
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
    SELECT id, turn FROM (SELECT id, 1 AS turn FROM expired UNION ALL SELECT id, turn FROM due) AS p LIMIT $3
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
  ), ${HISTORY_OF_EXPIRED}${WITH_PAYLOADS}`;
}

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
 * attempt: their confirm read had no answer or no budget yet (an early one keeps its mark),
 * or they are early ($5 = 'waiting': left out of the oldest pending age); why in last_error.
 * The claim keeps the mark, and every other way out of processing sets status_reason.
 */
export const DEFER = `
  UPDATE webhook_inbox i
     SET status = 'pending', status_reason = coalesce($5::text, i.status_reason), next_attempt_at = v.due, last_error = v.why, locked_by = NULL, locked_until = NULL
    FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS v(id, due, why)
   WHERE i.id = v.id AND i.locked_by = $4
  RETURNING i.id`;

/** Which of the ids $1 claim $2 still holds (after a batch's completion found a lease lost). */
export const STILL_HELD = `SELECT id FROM webhook_inbox WHERE id = ANY($1::bigint[]) AND locked_by = $2`;

/**
 * An endpoint's own copy ($2) of an event that another endpoint of the tenant stored `ignored`,
 * for its type or its `expect` (identities shared across endpoints: Stripe, Shopify), where $2
 * takes it. The row becomes this copy's, as a new pending row would be: pending for $2, due now,
 * no attempts or lease, its facts, secret label, digest and trace, its payload stored in today's
 * partition (and the ignored copy's removed from an older day, where nothing would reach it).
 * Locked first; a no-op if the row is no longer so (the other copy took it over first). The same
 * event type only: an id shared by two types is not one event.
 */
export const TAKE_OVER_IGNORED = `
  WITH old AS (
    SELECT id, payload_day FROM webhook_inbox
     WHERE id = $1 AND status = 'ignored' AND status_reason IN ('event_type_not_accepted', 'unexpected_source')
       AND endpoint_id <> $2 AND event_type = $10
       FOR UPDATE
  ), taken AS (
    UPDATE webhook_inbox i
       SET status = 'pending', status_reason = NULL, completed_at = NULL, next_attempt_at = now(), attempts = 0,
           last_error = NULL, confirmation = NULL, locked_by = NULL, locked_until = NULL, endpoint_id = $2,
           source_facts = $3::jsonb, verified_with = $4, payload_sha256 = $5, trace_context = $9,
           payload = NULL, payload_sealed = NULL, payload_key_id = NULL, payload_day = ${PAYLOAD_TODAY}
      FROM old WHERE i.id = old.id
    RETURNING i.id, i.payload_day
  ), stale AS (
    DELETE FROM webhook_inbox_payloads wp USING old
     WHERE wp.day = old.payload_day AND wp.inbox_id = old.id AND old.payload_day <> ${PAYLOAD_TODAY}
  ), payload AS (
    INSERT INTO webhook_inbox_payloads (day, inbox_id, payload, payload_sealed, payload_key_id)
    SELECT t.payload_day, t.id, $6::jsonb, $7::bytea, $8 FROM taken t
    ON CONFLICT (day, inbox_id) DO UPDATE
      SET payload = EXCLUDED.payload, payload_sealed = EXCLUDED.payload_sealed, payload_key_id = EXCLUDED.payload_key_id
  )
  SELECT id FROM taken`;

/**
 * Which of the identities ($1 scopes, $2 ids, $3 identity_at keys, pairwise) are in the inbox:
 * one probe of a unique index each, the keys with a time and the NULL ones apart (`IS NOT
 * DISTINCT FROM` would not use the index). With endpoint $4, a row another endpoint stored
 * `ignored` that $4's own copy may take over (TAKE_OVER_IGNORED) does not count: reconciliation
 * brings that copy in.
 */
export const EXISTING_IDENTITIES = `
  SELECT source_scope, event_id FROM (
    SELECT i.source_scope, i.event_id, i.status, i.status_reason, i.endpoint_id
      FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS v(source_scope, event_id, identity_at)
      JOIN webhook_inbox i ON i.identity_at = v.identity_at AND i.source_scope = v.source_scope AND i.event_id = v.event_id
    UNION ALL
    SELECT i.source_scope, i.event_id, i.status, i.status_reason, i.endpoint_id
      FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS v(source_scope, event_id, identity_at)
      JOIN webhook_inbox i ON i.identity_at IS NULL AND v.identity_at IS NULL
                          AND i.source_scope = v.source_scope AND i.event_id = v.event_id
  ) found
   WHERE $4::text IS NULL
      OR NOT (status = 'ignored' AND status_reason IN ('event_type_not_accepted', 'unexpected_source') AND endpoint_id <> $4::text)`;

// ---- Retention (maintenance role). Each is one bounded autocommit batch. ----

/**
 * Drops the payload (clear or sealed) of up to $2 settled legacy rows (done, ignored) received
 * before $1; identity, digest and status stay, so a resend is still answered `duplicate`.
 * Row by row (a non-HOT UPDATE each): only for rows stored before payloads moved to days,
 * whose days are forgotten by dropping a partition (payload-days.ts). Idle once none is left.
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
 * The payload still kept for a deleted row goes with it: a quarantined row's, carried along to
 * a day still kept; a settled row's when payloads outlive identities (RETENTION_PAYLOAD_DAYS 0,
 * or a row replayed late). Unreachable once its row is gone, it would escape erasure and
 * re-sealing. Arrays (init plans), so only the days named are read, each through its primary
 * key; days already dropped, the usual case, are not read at all.
 */
const WITH_DAY_PAYLOADS = `, day_payloads AS (
    DELETE FROM webhook_inbox_payloads
     WHERE day = ANY((SELECT array_agg(DISTINCT payload_day) FROM gone)::date[])
       AND inbox_id = ANY((SELECT array_agg(id) FROM gone)::bigint[])
  )`;

/**
 * Deletes up to $2 settled identities (done, ignored) received before $1, oldest
 * first (index webhook_inbox_received). Never pending or processing (work still to
 * do) nor quarantined (an operator's decision is still open). The identity's
 * attempt history and any payload still kept go with it.
 */
export const DELETE_IDENTITIES = deleteOldestReceived(`received_at < $1 AND status IN ('done', 'ignored')`, WITH_DAY_PAYLOADS);

/**
 * Deletes up to $2 quarantined events received before $1 and quarantined before $1
 * (RETENTION_ABANDONED_DAYS: an operator had that long to replay them), with their
 * attempt history. Once settled identities are gone, rows received before $1 are
 * only open ones, so the scan of webhook_inbox_received stays short.
 */
export const DELETE_ABANDONED = deleteOldestReceived(
  `received_at < $1 AND status = 'quarantined' AND completed_at < $1`,
  WITH_DAY_PAYLOADS,
);

/** One retention batch: up to $2 inbox rows matching `where`, oldest received first (webhook_inbox_received), with their attempts. */
function deleteOldestReceived(where: string, more = ''): string {
  return `
  WITH gone AS (
    DELETE FROM webhook_inbox
     WHERE id IN (SELECT id FROM webhook_inbox
                   WHERE ${where}
                   ORDER BY received_at, id
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
    RETURNING id, payload_day
  ), history AS (
    DELETE FROM webhook_inbox_attempts WHERE inbox_id IN (SELECT id FROM gone)
  )${more}
  SELECT count(*)::int AS n FROM gone`;
}

// ---- Payload keys (maintenance role and admin, through InboxService) ----

/**
 * The key ids stored payloads are sealed with, by loose scans of webhook_inbox_payload_key
 * (legacy rows) and webhook_inbox_payloads_key (one index probe per distinct id and
 * partition, however many rows), and whether clear payloads remain (a NULL). Run at every start.
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
  ), d AS (
    (SELECT payload_key_id FROM webhook_inbox_payloads WHERE payload_key_id IS NOT NULL ORDER BY payload_key_id LIMIT 1)
    UNION ALL
    SELECT (SELECT payload_key_id FROM webhook_inbox_payloads WHERE payload_key_id > d.payload_key_id ORDER BY payload_key_id LIMIT 1)
      FROM d WHERE d.payload_key_id IS NOT NULL
  )
  SELECT key_id FROM (SELECT payload_key_id AS key_id FROM k UNION SELECT payload_key_id FROM d) ids WHERE key_id IS NOT NULL
  UNION ALL
  SELECT NULL WHERE EXISTS (SELECT 1 FROM webhook_inbox WHERE ${PAYLOAD_STORED} AND payload_key_id IS NULL)
                 OR EXISTS (SELECT 1 FROM webhook_inbox_payloads WHERE payload_key_id IS NULL)`;

/** Partitions of webhook_inbox_payloads: their day, and whether a detach was started and not finished. */
export const PAYLOAD_PARTITIONS = `
  SELECT c.relname AS name, to_char(to_date(substr(c.relname, 24), 'YYYYMMDD'), 'YYYY-MM-DD') AS day,
         i.inhrelid IS NOT NULL AS attached, coalesce(i.inhdetachpending, false) AS detach_pending
    FROM pg_class c
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'webhook_inbox_payloads'::regclass
   WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND c.relname ~ '^webhook_inbox_payloads_[0-9]{8}$'
   ORDER BY c.relname`;

/**
 * Payloads per key id (NULL: clear) in a day detached and not yet dropped (`day` the table's
 * name, checked against PAYLOAD_PARTITIONS): only those of open rows still pointing at the day
 * count, as the next forgetting run carries them to today (sealed as they are) and drops the rest.
 */
export function detachedDayKeys(day: string): string {
  return `
  SELECT s.payload_key_id AS key_id, count(*) AS n
    FROM webhook_inbox i JOIN ${day} s ON s.inbox_id = i.id AND s.day = i.payload_day
   WHERE i.status IN ${OPEN_STATUSES} AND i.payload_day = $1::date
   GROUP BY 1`;
}

/** Stored payloads per key id (NULL: clear), legacy rows and days together, from their key indexes. */
export const PAYLOAD_ROWS_BY_KEY = `
  SELECT key_id, sum(n)::bigint AS n FROM (
    SELECT payload_key_id AS key_id, count(*) AS n FROM webhook_inbox WHERE ${PAYLOAD_STORED} GROUP BY 1
    UNION ALL
    SELECT payload_key_id, count(*) FROM webhook_inbox_payloads GROUP BY 1
  ) stored GROUP BY 1 ORDER BY 1`;

/** Stored payloads under one key ($1) or clear ones (`clear`), legacy rows and days together. */
export function payloadRowsOf(clear: boolean): string {
  return `SELECT (SELECT count(*) FROM webhook_inbox WHERE ${PAYLOAD_STORED} AND ${keyIs(clear, 1)})
               + (SELECT count(*) FROM webhook_inbox_payloads WHERE ${keyIs(clear, 1)}) AS n`;
}

function keyIs(clear: boolean, param: number, alias?: string): string {
  const column = alias ? `${alias}.payload_key_id` : 'payload_key_id';
  return clear ? `${column} IS NULL` : `${column} = $${param}`;
}

/**
 * One re-encryption batch of legacy rows: up to $2 rows stored under key $3 (or clear ones)
 * after id $1, in id order along webhook_inbox_payload_key (key id, id), locked until the
 * batch's commit. SKIP LOCKED: a row a worker or an operator holds is left to the next run.
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

/**
 * One re-encryption batch of day payloads: up to $2 under key $4 (or clear ones) after
 * (day $1, inbox id $3), in (day, inbox id) order (the partitions in turn, each along
 * webhook_inbox_payloads_key), with their row's identity (the seal's associated data);
 * payload and row locked until the batch's commit, SKIP LOCKED as above. A payload whose
 * row is gone (an orphan, dropped with its day) is not resealed.
 */
export function reencryptDayPick(clear: boolean): string {
  return `
  SELECT wp.day::text AS day, i.id, i.source_scope, i.event_id, wp.payload::text AS payload_text, wp.payload_sealed, wp.payload_key_id
    FROM webhook_inbox_payloads wp JOIN webhook_inbox i ON i.id = wp.inbox_id AND i.payload_day = wp.day
   WHERE ${keyIs(clear, 4, 'wp')} AND (wp.day, wp.inbox_id) > ($1::date, $3::bigint)
   ORDER BY wp.day, wp.inbox_id
   LIMIT $2
     FOR UPDATE OF wp, i SKIP LOCKED`;
}

/** Stores day payloads ($1 days, $2 inbox ids) sealed ($3) under key $4 (locked by reencryptDayPick); `= ANY($1)` reads only those days. */
export const REENCRYPT_DAY_STORE = `
  UPDATE webhook_inbox_payloads wp
     SET payload = NULL, payload_sealed = v.sealed, payload_key_id = $4
    FROM unnest($1::date[], $2::bigint[], $3::bytea[]) AS v(day, inbox_id, sealed)
   WHERE wp.day = v.day AND wp.inbox_id = v.inbox_id AND wp.day = ANY($1::date[])`;
