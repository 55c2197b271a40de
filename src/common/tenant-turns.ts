/**
 * Of a claim that serves the tenants with due work in turn (the worker's and the relay's), given
 * what it took per tenant: the tenants it left due work behind for. Of a full claim, those holding
 * an even share of it or more (one with less had nothing more due); of a short one, none.
 */
export function leftBehind(claimedPerTenant: ReadonlyMap<string, number>, full: boolean): Set<string> {
  if (!full) return new Set();
  let total = 0;
  for (const n of claimedPerTenant.values()) total += n;
  const share = Math.floor(total / Math.max(1, claimedPerTenant.size));
  return new Set([...claimedPerTenant].filter(([, n]) => n >= share).map(([tenant]) => tenant));
}
