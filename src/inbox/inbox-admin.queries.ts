/** Operator SQL of `webhook_inbox` (reads and repairs for the admin API and /metrics): not the hot path, reviewed like it. */
import { ROW_IN_SCOPE } from '../common/tenant-scope';
import { PAYLOAD_STORED } from './inbox.queries';

/** Columns of the admin view; `payload` is selected only for operators. */
export const ADMIN_VIEW_COLUMNS = `id, source_scope, event_id, tenant_id, provider, endpoint_id, event_type, status,
  status_reason, payload_sha256, verified_with, attempts, next_attempt_at, locked_by, locked_until, last_error,
  received_at, completed_at, deliveries, last_delivery_at, digest_conflicts, payload_key_id,
  NOT ${PAYLOAD_STORED} AS payload_purged`;

/** The payload columns of the operator's view, opened in memory (inbox-payloads.ts). */
export const ADMIN_PAYLOAD_COLUMNS = 'payload, payload_sealed';

/** Row lock for an admin change (same transaction as its audit row). */
export const ADMIN_LOCK = `
  SELECT status, status_reason, endpoint_id, event_type, source_facts, NOT ${PAYLOAD_STORED} AS payload_purged
    FROM webhook_inbox WHERE ${ROW_IN_SCOPE} FOR UPDATE`;

/** The effect preview's read of one row (no lock: the preview changes nothing of it), with its stored confirm reading. */
export const ADMIN_PREVIEW_ROW = `
  SELECT id, source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sealed, payload_key_id,
         received_at, source_facts, status, status_reason, confirmation, NOT ${PAYLOAD_STORED} AS payload_purged
    FROM webhook_inbox WHERE ${ROW_IN_SCOPE}`;

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
 * on meanwhile is left alone) and returns each row's status before the change. A
 * row whose sender was refused (`unexpected_source`) is never replayed, whatever the
 * caller decided from its earlier read.
 */
export function adminReplayBatch(filterSql: string, idsParam: string, nowParam: string): string {
  return `
  UPDATE webhook_inbox w
     SET status = 'pending', status_reason = NULL, attempts = 0, next_attempt_at = ${nowParam},
         locked_by = NULL, locked_until = NULL, completed_at = NULL
    FROM (SELECT id, status, status_reason FROM webhook_inbox
           ${filterSql} AND id = ANY(${idsParam}::bigint[]) AND ${PAYLOAD_STORED}
             AND NOT (status = 'ignored' AND status_reason IS NOT DISTINCT FROM 'unexpected_source')
           ORDER BY id FOR UPDATE) old
   WHERE w.id = old.id
  RETURNING w.id, old.status AS before, old.status_reason AS before_reason`;
}

/** Open backlog via the partial indexes (pending, processing, quarantined); never scans done rows. */
export const ADMIN_BACKLOG = `
  SELECT 'pending' AS status, count(*)::int AS n, min(received_at) AS oldest FROM webhook_inbox WHERE status = 'pending'
  UNION ALL
  SELECT 'processing', count(*)::int, NULL FROM webhook_inbox WHERE status = 'processing'
  UNION ALL
  SELECT 'quarantined', count(*)::int, NULL FROM webhook_inbox WHERE status = 'quarantined'`;

/** $1: the caller's tenants, NULL for all (so are the stats queries below; the latency's is $2). */
export const ADMIN_STATS_BY_STATUS = `
  SELECT status, count(*)::int AS n FROM webhook_inbox WHERE ($1::text[] IS NULL OR tenant_id = ANY($1)) GROUP BY status`;

export const ADMIN_STATS_OLDEST_PENDING = `
  SELECT min(received_at) AS oldest FROM webhook_inbox WHERE status = 'pending' AND ($1::text[] IS NULL OR tenant_id = ANY($1))`;

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
 * One erasure scan batch: up to $2 stored payloads after id $1 (primary key order),
 * of the tenants $3 (NULL: every tenant). Read without locks: the change that follows
 * locks the rows and decides again from their status then.
 */
export const ERASURE_SCAN = `
  SELECT id, tenant_id, status, source_scope, event_id, payload::text AS payload_text, payload_sealed, payload_key_id
    FROM webhook_inbox
   WHERE ${PAYLOAD_STORED} AND id > $1 AND ($3::text[] IS NULL OR tenant_id = ANY($3::text[]))
   ORDER BY id
   LIMIT $2`;

/** The rows $1 an erasure changes, locked in key order, with what deciding purge or redaction needs. */
export const ERASURE_LOCK = `
  SELECT id, tenant_id, status, source_scope, event_id, payload::text AS payload_text, payload_sealed, payload_key_id
    FROM webhook_inbox
   WHERE id = ANY($1::bigint[]) AND ${PAYLOAD_STORED}
   ORDER BY id
     FOR UPDATE`;

/**
 * Purges the payloads of the settled rows $1 (clear or sealed); identity, digest and
 * status stay, so dedup holds. Open rows are never purged here, whatever the caller
 * passed: their payload is work still to do.
 */
export const ERASE_PAYLOADS = `
  UPDATE webhook_inbox SET payload = NULL, payload_sealed = NULL, payload_key_id = NULL
   WHERE id = ANY($1::bigint[]) AND ${PAYLOAD_STORED} AND status IN ${ERASABLE_STATUSES}
  RETURNING id`;

/** Stores redacted payloads of rows $1: clear ($2) or sealed ($3 under key $4), as the row's form was. */
export const REDACT_PAYLOADS = `
  UPDATE webhook_inbox w
     SET payload = v.clear::jsonb, payload_sealed = v.sealed, payload_key_id = v.key_id
    FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[]) AS v(id, clear, sealed, key_id)
   WHERE w.id = v.id AND ${PAYLOAD_STORED}
  RETURNING w.id`;

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
 * Open rows (pending, processing) per endpoint and tenant, and the oldest pending one:
 * one branch per status, so each reads its partial index (webhook_inbox_due,
 * webhook_inbox_leased); `status IN (...)` matches neither and scans the table (2 s at 10M rows).
 */
export const BACKLOG_BY_ENDPOINT = `
  SELECT scope, tenant_id, sum(n)::int AS backlog, min(oldest) AS oldest FROM (
    SELECT endpoint_id AS scope, tenant_id, count(*) AS n, min(received_at) AS oldest FROM webhook_inbox WHERE status = 'pending' GROUP BY 1, 2
    UNION ALL
    SELECT endpoint_id, tenant_id, count(*), NULL FROM webhook_inbox WHERE status = 'processing' GROUP BY 1, 2
  ) open GROUP BY 1, 2`;
