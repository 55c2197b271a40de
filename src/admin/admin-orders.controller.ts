import { Body, Controller, Get, Param, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { BadRequestError, NotFoundError } from '../common/errors';
import { OrdersService } from '../orders/orders.service';
import { Order } from '../orders/orders.types';
import { AdminPrincipal, hasRole, scopeOf } from './admin-auth';
import { inScope } from '../common/tenant-scope';
import { AdminAuthGuard } from './admin-auth.guard';
import { BODY_REASONS, createOrderBody, parseOr400 } from './admin.schemas';
import { ApiAdmin, ApiZodBody, ApiZodResponse } from './api-docs';
import { order } from './admin.responses';
import { CurrentAdmin, Roles, TenantScoped } from './roles.decorator';

const PATH_PART = /^[\x21-\x7e]{1,255}$/;

@ApiTags('admin: orders')
@ApiAdmin()
@UseGuards(AdminAuthGuard)
@TenantScoped()
@Controller('admin/orders')
export class AdminOrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Get(':tenant/:id')
  @ApiOperation({ summary: "One order; the customer's email only for operators" })
  @ApiResponse({ status: 404, description: '`order_not_found`' })
  @ApiZodResponse(200, order)
  async get(@CurrentAdmin() who: AdminPrincipal, @Param('tenant') tenant: string, @Param('id') id: string) {
    if (!inScope(scopeOf(who), tenant)) throw orderNotFound();
    const order = await this.orders.get(parsePart(tenant), parsePart(id));
    return view(order, hasRole(who, 'operator'));
  }

  @Post()
  @Roles('operator')
  @ApiOperation({ summary: 'Create an order awaiting payment (the shop side of the flow)' })
  @ApiZodBody(createOrderBody)
  @ApiResponse({ status: 409, description: '`order_exists` or `payment_already_bound`' })
  @ApiZodResponse(201, order)
  async create(@CurrentAdmin() who: AdminPrincipal, @Body() body: unknown) {
    const { reason, ...input } = parseOr400(createOrderBody, body, 'invalid_body', BODY_REASONS);
    if (!inScope(scopeOf(who), input.tenantId)) throw orderNotFound();
    return view(await this.orders.create(input, { actor: who, reason }), true);
  }
}

/** The same answer as for an order that does not exist: no hint about another tenant's orders. */
function orderNotFound(): NotFoundError {
  return new NotFoundError('order_not_found', 'no such order');
}

function parsePart(text: string): string {
  if (!PATH_PART.test(text)) throw new BadRequestError('invalid_id', 'tenant and order id must be 1-255 printable characters');
  return text;
}

/** An order as the admin API shows it: `customerEmail` to operators only. */
type OrderView = Omit<Order, 'customerEmail'> & { customerEmail?: string };

/** A viewer sees the order's state, not the customer's personal data. */
function view(order: Order, operator: boolean): OrderView {
  if (operator) return order;
  const { customerEmail: _hidden, ...rest } = order;
  return rest;
}
