/** The tenants an operator's token may see and act on; undefined: every tenant. */
export type TenantScope = readonly string[] | undefined;

/**
 * SQL of a single-row admin read or lock: row $1 if it belongs to the tenants $2
 * (NULL: any). Another tenant's row is missed by the same statement that misses an
 * absent id, so its payload is never read, nor the row locked.
 */
export const ROW_IN_SCOPE = 'id = $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2::text[]))';

export function inScope(scope: TenantScope, tenant: string): boolean {
  return scope === undefined || scope.includes(tenant);
}
