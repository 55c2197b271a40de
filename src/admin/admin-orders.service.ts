import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OrdersService } from '../orders/orders.service';
import { CreateOrder, Order } from '../orders/orders.types';
import { AdminPrincipal } from './admin-auth';
import { AuditService } from '../audit/audit.service';

/** Order creation by an operator: the new order and its audit row commit together. */
@Injectable()
export class AdminOrdersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly orders: OrdersService,
    private readonly audit: AuditService,
  ) {}

  create(who: AdminPrincipal, input: CreateOrder, reason: string | undefined): Promise<Order> {
    return this.dataSource.transaction(async (tx) => {
      const order = await this.orders.create(input, tx);
      await this.audit.record(tx, who, {
        action: 'order.create',
        target: `order:${order.tenantId}/${order.id}`,
        reason: reason ?? 'order created',
        afterStatus: order.status,
        details: { totalMinor: order.totalMinor, currency: order.currency },
      });
      return order;
    });
  }
}
