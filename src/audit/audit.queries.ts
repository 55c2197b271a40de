/** SQL of the audit module's own table, `admin_audit` (append-only). */

export const INSERT_AUDIT = `
  INSERT INTO admin_audit (actor, role, action, target, reason, before_status, after_status, details)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
  RETURNING id`;

export const AUDIT_COLUMNS = `id, actor, role, action, target, reason, before_status, after_status, details, at`;
