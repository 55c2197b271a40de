/** SQL of the audit module's own table, `admin_audit` (append-only). */

export const INSERT_AUDIT = `
  INSERT INTO admin_audit (actor, role, action, target, reason, before_status, after_status, details)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
  RETURNING id`;

export const AUDIT_COLUMNS = `id, actor, role, action, target, reason, before_status, after_status, details, at`;

/**
 * The actions on one inbox event: on the event itself (index admin_audit_target),
 * on the operations it created, and the bulk replays that included it (their
 * batches list the ids they replayed).
 */
export const AUDIT_OF_EVENT = `
  SELECT ${AUDIT_COLUMNS} FROM admin_audit
   WHERE target = $1 OR target = ANY($2::text[])
      OR (target = 'inbox:filter' AND action = 'inbox.replay_bulk' AND details -> 'ids' ? $3)
   ORDER BY at, id`;

/** Retention: up to $2 audit rows older than $1, oldest first (index admin_audit_at). */
export const PRUNE_AUDIT = `
  WITH gone AS (
    DELETE FROM admin_audit WHERE id IN (SELECT id FROM admin_audit WHERE at < $1 ORDER BY at, id LIMIT $2)
    RETURNING id
  )
  SELECT count(*)::int AS n FROM gone`;
