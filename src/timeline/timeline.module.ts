import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { OrdersModule } from '../orders/orders.module';
import { OutboxModule } from '../outbox/outbox.module';
import { TimelineService } from './timeline.service';
import { EffectPreviewService } from './effect-preview.service';

/** Read model of one event's story across inbox, orders, outbox and audit, through their services; and its effect preview (a dry run). */
@Module({
  imports: [AuditModule, InboxModule, OrdersModule, OutboxModule],
  providers: [TimelineService, EffectPreviewService],
  exports: [TimelineService, EffectPreviewService],
})
export class TimelineModule {}
