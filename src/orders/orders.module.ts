import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { OutboxModule } from '../outbox/outbox.module';
import { OrdersRepository } from './orders.repository';
import { OrdersService } from './orders.service';
import { StripePaymentHandlers } from './stripe-payment.handlers';

@Module({
  imports: [AuditModule, OutboxModule],
  providers: [OrdersRepository, OrdersService, StripePaymentHandlers],
  exports: [OrdersService],
})
export class OrdersModule {}
