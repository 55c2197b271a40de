import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { AdminRole } from '../config/app-config';
import type { AdminPrincipal } from './admin-auth';

export const ROLES_KEY = 'admin:role';

/** The least role a route needs; routes without it need `viewer`. */
export const Roles = (role: AdminRole) => SetMetadata(ROLES_KEY, role);

export const TENANT_SCOPED_KEY = 'admin:tenant-scoped';

/**
 * The route narrows everything it reads and changes to the caller's tenants. A token
 * limited to tenants reaches only such routes (any other answers 404), so a route added
 * later without scoping is closed to it by default.
 */
export const TenantScoped = () => SetMetadata(TENANT_SCOPED_KEY, true);

export interface AdminRequest {
  admin?: AdminPrincipal;
}

/** The authenticated caller, set by AdminAuthGuard. */
export const CurrentAdmin = createParamDecorator((_: unknown, ctx: ExecutionContext): AdminPrincipal => {
  return ctx.switchToHttp().getRequest<AdminRequest>().admin!;
});
