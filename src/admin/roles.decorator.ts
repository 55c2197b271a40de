import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { AdminRole } from '../config/app-config';
import type { AdminPrincipal } from './admin-auth';

export const ROLES_KEY = 'admin:role';

/** The least role a route needs; routes without it need `viewer`. */
export const Roles = (role: AdminRole) => SetMetadata(ROLES_KEY, role);

export interface AdminRequest {
  admin?: AdminPrincipal;
}

/** The authenticated caller, set by AdminAuthGuard. */
export const CurrentAdmin = createParamDecorator((_: unknown, ctx: ExecutionContext): AdminPrincipal => {
  return ctx.switchToHttp().getRequest<AdminRequest>().admin!;
});
