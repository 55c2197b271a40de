/** Operator SQL of `webhook_inbox` (reads and repairs for the admin API and /metrics): not the hot path, reviewed like it. */
import { ROW_IN_SCOPE } from '../common/tenant-scope';
import { dayPayloadOf, OPEN_STATUSES, PAYLOAD_STORED, payloadKept } from './inbox.queries';

/**
 * Columns of the admin view (from `webhook_inbox`, unaliased); `payload` is selected only
 * for operators. A row's payload is in its day (one partition probe each) or, legacy, in
 * the row itself.
 */
export const ADMIN_VIEW_COLUMNS = `id, source_scope, event_id, tenant_id, provider, endpoint_id, event_type, status,
  status_reason, payload_sha256, verified_with, attempts, next_attempt_at, locked_by, locked_until, last_error,
  received_at, completed_at, deliveries, last_delivery_at, digest_conflicts,
  coalesce(payload_key_id, (SELECT wp.payload_key_id FROM ${dayPayloadOf('webhook_inbox')})) AS payload_key_id,
  NOT ${payloadKept('webhook_inbox')} AS payload_purged`;

/** The payload columns of the operator's view, opened in memory (inbox-payloads.ts). */
export const ADMIN_PAYLOAD_COLUMNS = `coalesce((SELECT wp.payload FROM ${dayPayloadOf('webhook_inbox')}), payload) AS payload,
  coalesce((SELECT wp.payload_sealed FROM ${dayPayloadOf('webhook_inbox')}), payload_sealed) AS payload_sealed`;

/** Row lock for an admin change (same transaction as its audit row). */
export const ADMIN_LOCK = `
  SELECT status, status_reason, endpoint_id, event_type, source_facts
    FROM webhook_inbox WHERE ${ROW_IN_SCOPE} FOR UPDATE`;

/**
 * Whether row $1's payload is gone, read after ADMIN_LOCK in a statement of its own: an erasure
 * deletes a day's payload while it holds the row, and a statement that waited for the row still
 * reads the payload as it was when the statement began.
 */
export const ADMIN_PAYLOAD_PURGED = `SELECT NOT ${payloadKept('webhook_inbox')} AS payload_purged FROM webhook_inbox WHERE id = $1`;

/** The effect preview's read of one row (no lock: the preview changes nothing of it), with its stored confirm reading. */
export const ADMIN_PREVIEW_ROW = `
  SELECT i.id, i.source_scope, i.event_id, i.tenant_id, i.provider, i.endpoint_id, i.event_type,
         coalesce(wp.payload, i.payload) AS payload, coalesce(wp.payload_sealed, i.payload_sealed) AS payload_sealed,
         coalesce(wp.payload_key_id, i.payload_key_id) AS payload_key_id,
         i.received_at, i.source_facts, i.status, i.status_reason, i.confirmation,
         NOT (${PAYLOAD_STORED.replace(/payload/g, 'i.payload')} OR wp.inbox_id IS NOT NULL) AS payload_purged
    FROM webhook_inbox i LEFT JOIN LATERAL (SELECT wp.* FROM ${dayPayloadOf('i')} LIMIT 1) wp ON true
   WHERE ${ROW_IN_SCOPE}`;

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

/** Locks a bulk-replay batch's rows before adminReplayBatch reads their payloads (ADMIN_PAYLOAD_PURGED says why). */
export function adminLockBatch(filterSql: string, idsParam: string): string {
  return `SELECT id FROM webhook_inbox ${filterSql} AND id = ANY(${idsParam}::bigint[]) ORDER BY id FOR UPDATE`;
}

/**
 * One bulk-replay batch, its rows locked by adminLockBatch: re-checks the filter (a row that moved
 * on meanwhile is left alone) and returns each row's status before the change. A
 * row whose sender was refused (`unexpected_source`) is never replayed, whatever the
 * caller decided from its earlier read. The rows fall due one after another in id order, `step`
 * milliseconds apart from `due` (0: all at `due`).
 */
export function adminReplayBatch(filterSql: string, idsParam: string, dueParam: string, stepParam: string): string {
  return `
  UPDATE webhook_inbox w
     SET status = 'pending', status_reason = NULL, attempts = 0,
         next_attempt_at = ${dueParam}::timestamptz + (old.n - 1) * ${stepParam}::float8 * interval '1 millisecond',
         locked_by = NULL, locked_until = NULL, completed_at = NULL
    FROM (SELECT *, row_number() OVER (ORDER BY id) AS n
            FROM (SELECT id, status, status_reason FROM webhook_inbox
                   ${filterSql} AND id = ANY(${idsParam}::bigint[]) AND ${payloadKept('webhook_inbox')}
                     AND NOT (status = 'ignored' AND status_reason IS NOT DISTINCT FROM 'unexpected_source')
                   ORDER BY id FOR UPDATE) locked) old
   WHERE w.id = old.id
  RETURNING w.id, old.status AS before, old.status_reason AS before_reason`;
}

/**
 * Open backlog via the partial indexes (pending, processing, quarantined); never scans done rows.
 * The oldest pending age leaves out early events waiting for an earlier one (status_reason
 * 'waiting', counted apart): a refund that waits days for its payment is not a stuck queue.
 */
export const ADMIN_BACKLOG = `
  SELECT 'pending' AS status, count(*)::int AS n, min(received_at) FILTER (WHERE status_reason IS DISTINCT FROM 'waiting') AS oldest,
         count(*) FILTER (WHERE status_reason = 'waiting')::int AS waiting
    FROM webhook_inbox WHERE status = 'pending'
  UNION ALL
  SELECT 'processing', count(*)::int, NULL, NULL FROM webhook_inbox WHERE status = 'processing'
  UNION ALL
  SELECT 'quarantined', count(*)::int, NULL, NULL FROM webhook_inbox WHERE status = 'quarantined'`;

/** $1: the caller's tenants, NULL for all (so are the stats queries below; the latency's is $2). */
export const ADMIN_STATS_BY_STATUS = `
  SELECT status, count(*)::int AS n FROM webhook_inbox WHERE ($1::text[] IS NULL OR tenant_id = ANY($1)) GROUP BY status`;

/** Early events waiting for an earlier one left out of the oldest, and counted (ADMIN_BACKLOG). */
export const ADMIN_STATS_OLDEST_PENDING = `
  SELECT min(received_at) FILTER (WHERE status_reason IS DISTINCT FROM 'waiting') AS oldest,
         count(*) FILTER (WHERE status_reason = 'waiting')::int AS waiting
    FROM webhook_inbox WHERE status = 'pending' AND ($1::text[] IS NULL OR tenant_id = ANY($1))`;

export const ADMIN_STATS_ATTEMPTS = `
  SELECT count(*) FILTER (WHERE status = 'pending' AND attempts > 0)::int AS retrying,
         coalesce(max(attempts), 0)::int AS max_attempts
    FROM webhook_inbox WHERE status IN ('pending', 'processing', 'quarantined') AND ($1::text[] IS NULL OR tenant_id = ANY($1))`;

/** The most frequent errors of open rows, grouped by provider and type. */
export const ADMIN_STATS_FAILURES = `
  SELECT provider, event_type AS type, left(last_error, 200) AS error, count(*)::int AS n
    FROM webhook_inbox
   WHERE status IN ('pending', 'processing', 'quarantined') AND last_error IS NOT NULL
     AND ($1::text[] IS NULL OR tenant_id = ANY($1))
   GROUP BY 1, 2, 3 ORDER BY n DESC, 1, 2, 3 LIMIT 20`;

/** Accept-to-done percentiles of events completed since $1. */
export const ADMIN_STATS_LATENCY = `
  SELECT count(*)::int AS completed,
         percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (
           ORDER BY extract(epoch FROM completed_at - received_at)) AS p
    FROM webhook_inbox WHERE status = 'done' AND completed_at >= $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2))`;

/**
 * Recent activity for the console's overview: accepted since $1 (index
 * webhook_inbox_received) and done since $1 (a scan of done rows, like
 * ADMIN_STATS_LATENCY).
 */
export const ADMIN_ACTIVITY = `
  SELECT (SELECT count(*) FROM webhook_inbox WHERE received_at >= $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2)))::int AS accepted,
         (SELECT count(*) FROM webhook_inbox WHERE status = 'done' AND completed_at >= $1
             AND ($2::text[] IS NULL OR tenant_id = ANY($2)))::int AS done`;

/** Per endpoint: the open rows (partial indexes) and those accepted since $1. */
export const ADMIN_ACTIVITY_BY_ENDPOINT = `
  SELECT endpoint_id,
         count(*) FILTER (WHERE status = 'pending')::int AS pending,
         count(*) FILTER (WHERE status = 'processing')::int AS processing,
         count(*) FILTER (WHERE status = 'quarantined')::int AS quarantined,
         count(*) FILTER (WHERE received_at >= $1)::int AS accepted
    FROM webhook_inbox
   WHERE (status IN ('pending', 'processing', 'quarantined') OR received_at >= $1)
     AND ($2::text[] IS NULL OR tenant_id = ANY($2))
   GROUP BY endpoint_id ORDER BY endpoint_id`;

/** One event's attempt history, oldest first (index webhook_inbox_attempts_inbox). */
export const ATTEMPTS_OF_EVENT = `
  SELECT attempt, at, lease, outcome, reason, error FROM webhook_inbox_attempts WHERE inbox_id = $1 ORDER BY at, attempt`;

// ---- Erasure (an operator's use case in the orders module) ----

/** Settled rows, whose payload only an operator's replay or read still needs: an erasure may purge it. */
export const ERASABLE_STATUSES = `('done', 'ignored')`;

/**
 * One erasure scan batch of legacy rows: up to $2 stored payloads after id $1 (primary key
 * order), of the tenants $3 (NULL: every tenant). Read without locks: the change that
 * follows locks the rows and decides again from their status then.
 */
export const ERASURE_SCAN = `
  SELECT id, tenant_id, status, source_scope, event_id, payload::text AS payload_text, payload_sealed, payload_key_id
    FROM webhook_inbox
   WHERE ${PAYLOAD_STORED} AND id > $1 AND ($3::text[] IS NULL OR tenant_id = ANY($3::text[]))
   ORDER BY id
   LIMIT $2`;

/**
 * One erasure scan batch of day payloads: up to $2 after (day $1, inbox id $4), in (day,
 * inbox id) order (a partition after the other, each along its primary key), of the
 * tenants $3, with their rows. A payload left in a day its row moved away from (carried
 * to today) is skipped: the row is met in its new day.
 */
export const ERASURE_DAY_SCAN = `
  SELECT wp.day::text AS day, i.id, i.tenant_id, i.status, i.source_scope, i.event_id,
         wp.payload::text AS payload_text, wp.payload_sealed, wp.payload_key_id
    FROM webhook_inbox_payloads wp JOIN webhook_inbox i ON i.id = wp.inbox_id AND i.payload_day = wp.day
   WHERE (wp.day, wp.inbox_id) > ($1::date, $4::bigint) AND ($3::text[] IS NULL OR i.tenant_id = ANY($3::text[]))
   ORDER BY wp.day, wp.inbox_id
   LIMIT $2`;

/**
 * The open rows (of the tenants $2) whose payloads wait in `day`, a day detached and not yet
 * dropped (PAYLOAD_PARTITIONS; the next forgetting run carries them to today), with those
 * payloads: the day scan no longer sees them, nor can an erasure lock them there.
 */
export function erasureDetachedScan(day: string): string {
  return `
  SELECT NULL AS day, i.id, i.tenant_id, i.status, i.source_scope, i.event_id,
         s.payload::text AS payload_text, s.payload_sealed, s.payload_key_id
    FROM webhook_inbox i JOIN ${day} s ON s.inbox_id = i.id AND s.day = i.payload_day
   WHERE i.payload_day = $1::date AND i.status IN ${OPEN_STATUSES} AND ($2::text[] IS NULL OR i.tenant_id = ANY($2::text[]))`;
}

/** The rows $1 an erasure changes, locked in key order (ERASURE_READ then reads them). */
export const ERASURE_LOCK = `SELECT id FROM webhook_inbox WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`;

/**
 * The rows $1, locked by ERASURE_LOCK, with their payload (in their day, one probe each, or legacy
 * in the row). A statement of its own, after the lock: an erasure that held a row until then (its
 * payload already redacted, the row itself unchanged) is read as it left it, not as this
 * transaction's first snapshot saw it, which would write the other customer's address back.
 */
export const ERASURE_READ = `
  SELECT i.id, i.tenant_id, i.status, i.source_scope, i.event_id, i.payload_day::text AS day,
         coalesce(wp.payload, i.payload)::text AS payload_text, coalesce(wp.payload_sealed, i.payload_sealed) AS payload_sealed,
         coalesce(wp.payload_key_id, i.payload_key_id) AS payload_key_id
    FROM webhook_inbox i LEFT JOIN LATERAL (SELECT wp.* FROM ${dayPayloadOf('i')} LIMIT 1) wp ON true
   WHERE i.id = ANY($1::bigint[]) AND (${PAYLOAD_STORED.replace(/payload/g, 'i.payload')} OR wp.inbox_id IS NOT NULL)
   ORDER BY i.id`;

/**
 * Purges the payloads of the settled rows $1 (clear or sealed), in the row (legacy) and in
 * its day; identity, digest and status stay, so dedup holds. Open rows are never purged
 * here, whatever the caller passed: their payload is work still to do. The day payloads
 * are found by arrays (init plans): only the days named are read, by primary key.
 */
export const ERASE_PAYLOADS = `
  WITH settled AS (
    SELECT id, payload_day FROM webhook_inbox WHERE id = ANY($1::bigint[]) AND status IN ${ERASABLE_STATUSES}
  ), legacy AS (
    UPDATE webhook_inbox SET payload = NULL, payload_sealed = NULL, payload_key_id = NULL
     WHERE id IN (SELECT id FROM settled) AND ${PAYLOAD_STORED}
    RETURNING id
  ), days AS (
    DELETE FROM webhook_inbox_payloads wp
     WHERE wp.day = ANY((SELECT array_agg(DISTINCT payload_day) FROM settled)::date[])
       AND wp.inbox_id = ANY((SELECT array_agg(id) FROM settled)::bigint[])
    RETURNING wp.inbox_id AS id
  )
  SELECT id FROM legacy UNION SELECT id FROM days`;

/**
 * Stores redacted payloads of rows $1: clear ($2) or sealed ($3 under key $4), as the
 * payload's form was, where it is (its day $5, or the row for a legacy one, $5 NULL).
 */
export const REDACT_PAYLOADS = `
  WITH v AS (
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[], $5::date[]) AS v(id, clear, sealed, key_id, day)
  ), legacy AS (
    UPDATE webhook_inbox w
       SET payload = v.clear::jsonb, payload_sealed = v.sealed, payload_key_id = v.key_id
      FROM v
     WHERE w.id = v.id AND v.day IS NULL AND ${PAYLOAD_STORED.replace(/payload/g, 'w.payload')}
    RETURNING w.id
  ), days AS (
    UPDATE webhook_inbox_payloads wp
       SET payload = v.clear::jsonb, payload_sealed = v.sealed, payload_key_id = v.key_id
      FROM v
     WHERE wp.day = v.day AND wp.inbox_id = v.id AND wp.day = ANY($5::date[])
    RETURNING wp.inbox_id AS id
  )
  SELECT id FROM legacy UNION ALL SELECT id FROM days`;

/**
 * Per minute of [$1, $2), endpoint and tenant: events accepted (index webhook_inbox_received)
 * and attempts that ended done or quarantined (index webhook_inbox_attempts_at, each
 * joined to its event by webhook_inbox_pkey). For the maintenance role's activity rollup.
 */
export const ACTIVITY_BY_MINUTE = `
  WITH accepted AS (
    SELECT date_trunc('minute', received_at) AS minute, endpoint_id AS scope, tenant_id, count(*)::int AS accepted
      FROM webhook_inbox WHERE received_at >= $1 AND received_at < $2
     GROUP BY 1, 2, 3
  ), settled AS (
    SELECT date_trunc('minute', a.at) AS minute, i.endpoint_id AS scope, i.tenant_id,
           count(*) FILTER (WHERE a.outcome = 'done')::int AS done,
           count(*) FILTER (WHERE a.outcome = 'quarantined')::int AS quarantined
      FROM webhook_inbox_attempts a JOIN webhook_inbox i ON i.id = a.inbox_id
     WHERE a.at >= $1 AND a.at < $2 AND a.outcome IN ('done', 'quarantined')
     GROUP BY 1, 2, 3
  )
  SELECT minute, scope, tenant_id, coalesce(accepted, 0) AS accepted, coalesce(done, 0) AS done, coalesce(quarantined, 0) AS quarantined
    FROM accepted FULL JOIN settled USING (minute, scope, tenant_id)`;

/**
 * Open rows (pending, processing) per endpoint and tenant, and the oldest pending one (not
 * waiting, as in ADMIN_BACKLOG):
 * one branch per status, so each reads its partial index (webhook_inbox_due,
 * webhook_inbox_leased); `status IN (...)` matches neither and scans the table (2 s at 10M rows).
 */
export const BACKLOG_BY_ENDPOINT = `
  SELECT scope, tenant_id, sum(n)::int AS backlog, min(oldest) AS oldest FROM (
    SELECT endpoint_id AS scope, tenant_id, count(*) AS n, min(received_at) FILTER (WHERE status_reason IS DISTINCT FROM 'waiting') AS oldest
      FROM webhook_inbox WHERE status = 'pending' GROUP BY 1, 2
    UNION ALL
    SELECT endpoint_id, tenant_id, count(*), NULL FROM webhook_inbox WHERE status = 'processing' GROUP BY 1, 2
  ) open GROUP BY 1, 2`;
