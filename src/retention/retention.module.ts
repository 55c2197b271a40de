import { Module } from '@nestjs/common';
import { InboxModule } from '../inbox/inbox.module';
import { OutboxModule } from '../outbox/outbox.module';
import { PayloadReencryptionScheduler } from './payload-reencryption.scheduler';
import { PayloadReencryptionService } from './payload-reencryption.service';
import { ReencryptionMetrics } from './reencryption.metrics';
import { RetentionMetrics } from './retention.metrics';
import { RetentionScheduler } from './retention.scheduler';
import { RetentionService } from './retention.service';

/**
 * The `maintenance` role's jobs: retention, and the re-encryption of payloads after a
 * key rotation. They own no table and work through the inbox and outbox services.
 */
@Module({
  imports: [InboxModule, OutboxModule],
  providers: [RetentionService, RetentionScheduler, RetentionMetrics, PayloadReencryptionService, PayloadReencryptionScheduler, ReencryptionMetrics],
  exports: [RetentionService, PayloadReencryptionService],
})
export class RetentionModule {}
