import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { APP_CONFIG, AdminRole, AppConfig } from '../config/app-config';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../common/errors';
import { authenticateBearer, hasRole } from './admin-auth';
import { AdminRequest, ROLES_KEY, TENANT_SCOPED_KEY } from './roles.decorator';

/** Bearer-token authentication and role check for every /admin route. */
@Injectable()
export class AdminAuthGuard implements CanActivate {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request & AdminRequest>();
    const result = authenticateBearer(req.headers.authorization, this.config.adminTokens);
    if (!result.ok) throw new UnauthorizedError(result.reason, 'a valid admin Bearer token is required');
    const required =
      this.reflector.getAllAndOverride<AdminRole | undefined>(ROLES_KEY, [context.getHandler(), context.getClass()]) ?? 'viewer';
    const scoped = this.reflector.getAllAndOverride<boolean | undefined>(TENANT_SCOPED_KEY, [context.getHandler(), context.getClass()]);
    if (result.principal.tenants && !scoped) throw new NotFoundError('not_found', 'no such route for this token');
    if (!hasRole(result.principal, required)) {
      throw new ForbiddenError('insufficient_role', `this action needs the ${required} role`);
    }
    req.admin = result.principal;
    return true;
  }
}
