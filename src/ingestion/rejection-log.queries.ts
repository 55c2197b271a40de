/** SQL of the ingestion module's own table, `webhook_rejections` (the sampled rejected-request log). */

/** One flush: every row kept since the last one, in one statement. */
export const INSERT_REJECTIONS = `
  INSERT INTO webhook_rejections
         (at, endpoint_id, tenant_id, provider, reason, http_status, remote_address, declared_bytes, received_bytes, unlogged_before)
  SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::text[],
                       $8::bigint[], $9::int[], $10::int[])`;

export const REJECTION_COLUMNS = `id, at, endpoint_id, tenant_id, provider, reason, http_status, remote_address, declared_bytes,
  received_bytes, unlogged_before`;

/** Retention (RETENTION_REJECTION_DAYS): up to $2 rows older than $1, oldest first (webhook_rejections_at). */
export const PRUNE_REJECTIONS = `
  WITH gone AS (
    DELETE FROM webhook_rejections
     WHERE id IN (SELECT id FROM webhook_rejections WHERE at < $1 ORDER BY at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
    RETURNING id
  )
  SELECT count(*)::int AS n FROM gone`;

/**
 * Retention (REJECTION_LOG_MAX_ROWS = $2): up to $3 rows of the endpoints $1 beyond each one's
 * $2 newest, oldest first. Per endpoint, the index (webhook_rejections_endpoint_at) finds the
 * newest row past the cap in $2 index entries; nothing is scanned for an endpoint under it.
 */
export const TRIM_REJECTIONS = `
  WITH cut AS (
    SELECT e.endpoint_id, c.at, c.id
      FROM unnest($1::text[]) AS e(endpoint_id)
     CROSS JOIN LATERAL (SELECT r.at, r.id FROM webhook_rejections r
                          WHERE r.endpoint_id = e.endpoint_id
                          ORDER BY r.at DESC, r.id DESC OFFSET $2 LIMIT 1) c
  ), gone AS (
    DELETE FROM webhook_rejections
     WHERE id IN (SELECT o.id FROM cut
                   CROSS JOIN LATERAL (SELECT r.id FROM webhook_rejections r
                                        WHERE r.endpoint_id = cut.endpoint_id AND (r.at, r.id) <= (cut.at, cut.id)
                                        ORDER BY r.at, r.id LIMIT $3 FOR UPDATE SKIP LOCKED) o
                   LIMIT $3)
    RETURNING id
  )
  SELECT count(*)::int AS n FROM gone`;
