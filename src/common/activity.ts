/** One minute of one scope (an endpoint or a destination) of one tenant: what happened in it. */
export interface ScopeMinute {
  minute: Date;
  scope: string;
  tenantId: string;
  counts: Partial<Record<ActivityCount, number>>;
}

export type ActivityCount = 'accepted' | 'done' | 'quarantined' | 'delivered' | 'failed';

/** A scope's open work when it was looked at. */
export interface ScopeBacklog {
  scope: string;
  tenantId: string;
  backlog: number;
  oldestPendingAt: Date | null;
}

/** Rows of a backlog query (`scope, tenant_id, backlog, oldest`). */
export function toScopeBacklogs(rows: { scope: string; tenant_id: string; backlog: number; oldest: Date | null }[]): ScopeBacklog[] {
  return rows.map((r) => ({ scope: r.scope, tenantId: r.tenant_id, backlog: r.backlog, oldestPendingAt: r.oldest }));
}
