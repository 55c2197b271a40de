import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { IngestionModule } from '../ingestion/ingestion.module';
import { OrdersModule } from '../orders/orders.module';
import { ReconciliationModule } from '../reconciliation/reconciliation.module';
import { OutboxModule } from '../outbox/outbox.module';
import { PayloadReencryptionScheduler } from './payload-reencryption.scheduler';
import { PayloadReencryptionService } from './payload-reencryption.service';
import { ReencryptionMetrics } from './reencryption.metrics';
import { RetentionMetrics } from './retention.metrics';
import { RetentionScheduler } from './retention.scheduler';
import { RetentionService } from './retention.service';

/**
 * The `maintenance` role's jobs: retention (the lifecycle of every table that grows),
 * and the re-encryption of payloads after a key rotation. They own no table and work
 * through each owning module's service.
 */
@Module({
  imports: [InboxModule, IngestionModule, OutboxModule, OrdersModule, AuditModule, ReconciliationModule],
  providers: [
    RetentionService,
    RetentionScheduler,
    RetentionMetrics,
    PayloadReencryptionService,
    PayloadReencryptionScheduler,
    ReencryptionMetrics,
  ],
  exports: [RetentionService, PayloadReencryptionService],
})
export class RetentionModule {}
