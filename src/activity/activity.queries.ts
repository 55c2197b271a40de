/** SQL of `activity_minutes` and its cursor `activity_rollup` (the charts' source). */

/**
 * Writes minutes of counts ($1..$8 arrays of one row each); a minute counted again
 * (the rollup re-counts the last ones, for attempts that committed late) is replaced.
 * The backlog columns are the snapshot's and are left alone.
 */
export const UPSERT_COUNTS = `
  INSERT INTO activity_minutes AS m (minute, kind, scope, tenant_id, accepted, done, quarantined, delivered, failed)
  SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[], $8::int[], $9::int[])
  ON CONFLICT (minute, kind, scope, tenant_id) DO UPDATE
     SET accepted = excluded.accepted, done = excluded.done, quarantined = excluded.quarantined,
         delivered = excluded.delivered, failed = excluded.failed`;

/** The open backlog of each scope seen at minute $1 ($2..$6 arrays); counts are left alone. */
export const UPSERT_BACKLOG = `
  INSERT INTO activity_minutes AS m (minute, kind, scope, tenant_id, backlog, oldest_pending_age_seconds)
  SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::int[])
  ON CONFLICT (minute, kind, scope, tenant_id) DO UPDATE
     SET backlog = excluded.backlog, oldest_pending_age_seconds = excluded.oldest_pending_age_seconds`;

/** Counts of minutes up to $1 (exclusive) are final, but for late commits. */
export const ROLLED_TO = `SELECT rolled_to FROM activity_rollup WHERE id`;

/** Forward only: two maintenance instances may both run a round. */
export const ADVANCE_ROLLED_TO = `
  INSERT INTO activity_rollup (id, rolled_to) VALUES (true, $1)
  ON CONFLICT (id) DO UPDATE SET rolled_to = greatest(activity_rollup.rolled_to, excluded.rolled_to)`;

/**
 * The hours of [$1, $2) again from their minutes: counts summed, the backlog and age
 * at each scope's worst in the hour (a week's chart shows the sum of those worsts).
 */
export const ROLL_HOURS = `
  INSERT INTO activity_hours AS h (minute, kind, scope, tenant_id, accepted, done, quarantined, delivered, failed, backlog, oldest_pending_age_seconds)
  SELECT date_trunc('hour', minute), kind, scope, tenant_id, sum(accepted), sum(done), sum(quarantined), sum(delivered), sum(failed),
         max(backlog), max(oldest_pending_age_seconds)
    FROM activity_minutes WHERE minute >= date_trunc('hour', $1::timestamptz) AND minute < $2
   GROUP BY 1, 2, 3, 4
  ON CONFLICT (minute, kind, scope, tenant_id) DO UPDATE
     SET accepted = excluded.accepted, done = excluded.done, quarantined = excluded.quarantined, delivered = excluded.delivered,
         failed = excluded.failed, backlog = excluded.backlog, oldest_pending_age_seconds = excluded.oldest_pending_age_seconds`;

/** Rows older than the longest chart window (primary keys' leading column). */
export const DELETE_BEFORE = `
  WITH minutes AS (DELETE FROM activity_minutes WHERE minute < $1)
  DELETE FROM activity_hours WHERE minute < date_trunc('hour', $1::timestamptz)`;

/**
 * One chart: the minutes (or hours) of [$2, $3) of one kind ($1), summed over the scopes the
 * caller may see (tenants $5, NULL: all; scope $4, NULL: all), then per bucket of $6
 * seconds: counts summed, backlog and oldest age at their worst. A range scan of the
 * primary key (minute, kind, ...).
 */
export const series = (table: 'activity_minutes' | 'activity_hours') => `
  WITH per_minute AS (
    SELECT minute, sum(accepted) AS accepted, sum(done) AS done, sum(quarantined) AS quarantined,
           sum(delivered) AS delivered, sum(failed) AS failed,
           sum(backlog) AS backlog, max(oldest_pending_age_seconds) AS oldest
      FROM ${table}
     WHERE minute >= $2 AND minute < $3 AND kind = $1
       AND ($4::text IS NULL OR scope = $4) AND ($5::text[] IS NULL OR tenant_id = ANY($5))
     GROUP BY minute
  )
  SELECT date_bin(make_interval(secs => $6), minute, $2) AS bucket,
         sum(accepted)::int AS accepted, sum(done)::int AS done, sum(quarantined)::int AS quarantined,
         sum(delivered)::int AS delivered, sum(failed)::int AS failed,
         max(backlog)::int AS backlog, max(oldest)::int AS oldest
    FROM per_minute GROUP BY 1 ORDER BY 1`;

export const SERIES_BY_MINUTE = series('activity_minutes');
export const SERIES_BY_HOUR = series('activity_hours');

/** The scopes of a kind with any row in the window, for the chart's picker. */
export const SCOPES = `
  SELECT DISTINCT scope FROM activity_minutes
   WHERE minute >= $2 AND minute < $3 AND kind = $1 AND ($4::text[] IS NULL OR tenant_id = ANY($4))
   ORDER BY scope LIMIT 200`;
