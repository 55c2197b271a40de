/** The tenants an operator's token may see and act on; undefined: every tenant. */
export type TenantScope = readonly string[] | undefined;

export function inScope(scope: TenantScope, tenant: string): boolean {
  return scope === undefined || scope.includes(tenant);
}
