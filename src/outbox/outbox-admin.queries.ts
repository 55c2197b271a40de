/** Operator SQL of `outbox` (reads and repairs for the admin API and /metrics): never on the relay's path. */
import { ROW_IN_SCOPE } from '../common/tenant-scope';

/** The earliest earlier entry of a pending row's aggregate and destination that is not delivered (index outbox_aggregate). */
const HELD_BY = (o: string) => `CASE WHEN ${o}.status = 'pending' AND ${o}.aggregate IS NOT NULL THEN (
    SELECT e.id FROM outbox e
     WHERE e.tenant_id = ${o}.tenant_id AND e.aggregate = ${o}.aggregate AND e.aggregate_seq < ${o}.aggregate_seq
       AND e.destination = ${o}.destination AND e.status <> 'delivered'
     ORDER BY e.aggregate_seq LIMIT 1) END`;

export const ADMIN_OUTBOX_COLUMNS = `id, operation_key, destination, operation_type, tenant_id, status, attempts,
  next_attempt_at, locked_by, locked_until, last_error, last_status_code, outcome_unknown, source_event_id,
  created_at, delivered_at, aggregate, aggregate_seq, ${HELD_BY('outbox')} AS held_by`;

/** `erased`: an e-mail whose recipient an erasure blanked, whatever became of it since (a later outcome may have overwritten last_error). */
export const ADMIN_OUTBOX_LOCK = `
  SELECT status, (last_error = 'erased' OR (destination = 'email' AND payload->>'to' = '')) AS erased
    FROM outbox WHERE ${ROW_IN_SCOPE} FOR UPDATE`;

/**
 * Back to pending under the same operation key with a fresh attempt budget.
 * outcome_unknown is kept, so the relay still asks the destination first where it can.
 */
export const ADMIN_OUTBOX_REQUEUE = `
  UPDATE outbox
     SET status = 'pending', attempts = 0, next_attempt_at = $2, locked_by = NULL, locked_until = NULL
   WHERE id = $1`;

/** Held entries behind a settled one are due at once (as RECORD_OUTCOMES does for the relay). */
export const ADMIN_OUTBOX_RELEASE_HELD = `
  UPDATE outbox n
     SET next_attempt_at = $2
    FROM outbox d
   WHERE d.id = $1 AND d.aggregate IS NOT NULL
     AND n.tenant_id = d.tenant_id AND n.aggregate = d.aggregate AND n.aggregate_seq > d.aggregate_seq
     AND n.destination = d.destination AND n.status = 'pending' AND n.next_attempt_at > $2`;

/** Open entries of each destination by status, and how many pending ones are held. */
export const ADMIN_DESTINATION_BACKLOG = `
  SELECT destination, status, count(*)::int AS n,
         count(*) FILTER (WHERE ${HELD_BY('o')} IS NOT NULL)::int AS held
    FROM outbox o
   WHERE status IN ('pending', 'delivering', 'unresolved', 'dead')
   GROUP BY 1, 2`;

/** Every destination's shared state row (circuit, pause, rate limit). */
export const ADMIN_DESTINATION_STATES = `
  SELECT destination, circuit, failures, retry_at, probe_until, paused_until, tokens, tokens_at, last_error, changed_at
    FROM outbox_destinations`;

/** An operator confirmed the destination applied the operation. */
export const ADMIN_OUTBOX_MARK_DELIVERED = `
  UPDATE outbox
     SET status = 'delivered', delivered_at = $2, outcome_unknown = false, locked_by = NULL, locked_until = NULL
   WHERE id = $1`;

/** Open backlog via partial indexes; delivered rows are never scanned. */
export const ADMIN_OUTBOX_BACKLOG = `
  SELECT 'pending' AS status, count(*)::int AS n, min(created_at) AS oldest FROM outbox WHERE status = 'pending'
  UNION ALL
  SELECT 'held', count(*)::int, NULL FROM outbox o WHERE o.status = 'pending' AND ${HELD_BY('o')} IS NOT NULL
  UNION ALL
  SELECT 'delivering', count(*)::int, NULL FROM outbox WHERE status = 'delivering'
  UNION ALL
  SELECT 'unresolved', count(*)::int, NULL FROM outbox WHERE status = 'unresolved'
  UNION ALL
  SELECT 'dead', count(*)::int, NULL FROM outbox WHERE status = 'dead'`;

/** $1: the caller's tenants, NULL for all (so are the stats queries below). */
export const ADMIN_OUTBOX_BY_STATUS = `SELECT status, count(*)::int AS n FROM outbox WHERE ($1::text[] IS NULL OR tenant_id = ANY($1)) GROUP BY status`;

export const ADMIN_OUTBOX_OLDEST_PENDING = `
  SELECT min(created_at) AS oldest FROM outbox WHERE status = 'pending' AND ($1::text[] IS NULL OR tenant_id = ANY($1))`;

export const ADMIN_OUTBOX_FAILURES = `
  SELECT destination, operation_type AS type, left(last_error, 200) AS error, count(*)::int AS n
    FROM outbox
   WHERE status IN ('pending', 'delivering', 'unresolved', 'dead') AND last_error IS NOT NULL
     AND ($1::text[] IS NULL OR tenant_id = ANY($1))
   GROUP BY 1, 2, 3 ORDER BY n DESC, 1, 2, 3 LIMIT 20`;

/** Entries delivered since $1 (a scan of delivered rows, which retention keeps few). */
export const ADMIN_OUTBOX_DELIVERED_SINCE = `
  SELECT count(*)::int AS n FROM outbox
   WHERE status = 'delivered' AND delivered_at >= $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2))`;

/** The entries an inbox event's business transaction wrote (index outbox_source_event). */
export const ENTRIES_OF_EVENT = `SELECT ${ADMIN_OUTBOX_COLUMNS} FROM outbox WHERE source_event_id = $1 ORDER BY id`;

/** The entries the current transaction wrote for an inbox event (created_at defaults to the transaction's now()). */
export const ENTRIES_WRITTEN_NOW = `SELECT ${ADMIN_OUTBOX_COLUMNS} FROM outbox WHERE source_event_id = $1 AND created_at = now() ORDER BY id`;

/** The attempt history of some entries, oldest first (index outbox_attempts_outbox). */
export const ATTEMPTS_OF_ENTRIES = `
  SELECT outbox_id, attempt, at, lease, outcome, status_code, duration_ms, outcome_query, retry_after_ms, error
    FROM outbox_attempts WHERE outbox_id = ANY($1::bigint[]) ORDER BY at, attempt`;

/**
 * Per minute of [$1, $2), destination and tenant: delivery attempts delivered and failed
 * (retry, dead, unresolved) (index outbox_attempts_at, each joined to its entry by
 * outbox_pkey). For the maintenance role's activity rollup.
 */
export const DELIVERIES_BY_MINUTE = `
  SELECT date_trunc('minute', a.at) AS minute, o.destination AS scope, o.tenant_id,
         count(*) FILTER (WHERE a.outcome = 'delivered')::int AS delivered,
         count(*) FILTER (WHERE a.outcome <> 'delivered')::int AS failed
    FROM outbox_attempts a JOIN outbox o ON o.id = a.outbox_id
   WHERE a.at >= $1 AND a.at < $2
   GROUP BY 1, 2, 3`;

/** Open entries (pending, delivering) per destination and tenant, and the oldest pending one: a branch per partial index, as BACKLOG_BY_ENDPOINT. */
export const BACKLOG_BY_DESTINATION = `
  SELECT scope, tenant_id, sum(n)::int AS backlog, min(oldest) AS oldest FROM (
    SELECT destination AS scope, tenant_id, count(*) AS n, min(created_at) AS oldest FROM outbox WHERE status = 'pending' GROUP BY 1, 2
    UNION ALL
    SELECT destination, tenant_id, count(*), NULL FROM outbox WHERE status = 'delivering' GROUP BY 1, 2
  ) open GROUP BY 1, 2`;
