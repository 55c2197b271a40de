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
