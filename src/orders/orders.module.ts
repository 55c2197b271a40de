import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { OutboxModule } from '../outbox/outbox.module';
import { CustomerErasureService } from './customer-erasure.service';
import { OrdersRepository } from './orders.repository';
import { OrdersService } from './orders.service';
import { StripePaymentHandlers } from './stripe-payment.handlers';

@Module({
  imports: [AuditModule, InboxModule, OutboxModule],
  providers: [OrdersRepository, OrdersService, CustomerErasureService, StripePaymentHandlers],
  exports: [OrdersService, CustomerErasureService],
})
export class OrdersModule {}
