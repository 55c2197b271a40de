import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { OrdersModule } from '../orders/orders.module';
import { OutboxModule } from '../outbox/outbox.module';
import { TimelineService } from './timeline.service';

/** Read model of one event's story across inbox, orders, outbox and audit, through their services. */
@Module({
  imports: [AuditModule, InboxModule, OrdersModule, OutboxModule],
  providers: [TimelineService],
  exports: [TimelineService],
})
export class TimelineModule {}
