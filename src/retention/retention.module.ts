import { Module } from '@nestjs/common';
import { InboxModule } from '../inbox/inbox.module';
import { OutboxModule } from '../outbox/outbox.module';
import { RetentionMetrics } from './retention.metrics';
import { RetentionScheduler } from './retention.scheduler';
import { RetentionService } from './retention.service';

/** The retention job (`maintenance` role): it owns no table and works through the inbox and outbox services. */
@Module({
  imports: [InboxModule, OutboxModule],
  providers: [RetentionService, RetentionScheduler, RetentionMetrics],
  exports: [RetentionService],
})
export class RetentionModule {}
