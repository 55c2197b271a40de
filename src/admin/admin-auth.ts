import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerToken } from '../common/bearer-token';
import { AdminRole, AdminToken } from '../config/app-config';
import { TenantScope } from '../common/tenant-scope';

export interface AdminPrincipal {
  name: string;
  role: AdminRole;
  /** The tenants this token is limited to; undefined: all. */
  tenants?: readonly string[];
}

/** The tenants a caller may see and act on (undefined: all). */
export function scopeOf(principal: AdminPrincipal): TenantScope {
  return principal.tenants;
}

const RANK: Record<AdminRole, number> = { viewer: 1, operator: 2 };

/** viewer < operator: an operator may do everything a viewer may. */
export function hasRole(principal: AdminPrincipal, required: AdminRole): boolean {
  return RANK[principal.role] >= RANK[required];
}

export type AuthResult = { ok: true; principal: AdminPrincipal } | { ok: false; reason: 'missing_token' | 'invalid_token' };

/**
 * Checks an `Authorization: Bearer <token>` header against the configured token digests.
 * Digests have a fixed length, so timingSafeEqual never throws and the comparison
 * time says nothing about the token; every entry is compared (no early exit).
 */
export function authenticateBearer(header: string | undefined, tokens: readonly AdminToken[]): AuthResult {
  const token = bearerToken(header);
  if (token === undefined) return { ok: false, reason: 'missing_token' };
  const digest = createHash('sha256').update(token, 'utf8').digest();
  let match: AdminToken | undefined;
  for (const candidate of tokens) {
    if (timingSafeEqual(digest, candidate.sha256) && !match) match = candidate;
  }
  return match
    ? { ok: true, principal: { name: match.name, role: match.role, tenants: match.tenants && [...match.tenants] } }
    : { ok: false, reason: 'invalid_token' };
}
