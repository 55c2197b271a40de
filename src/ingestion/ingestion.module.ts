import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { InboxModule } from '../inbox/inbox.module';
import { IngestionMetrics } from './ingestion.metrics';
import { IngestionService } from './ingestion.service';
import { OmitPathsCheck } from './omit-paths.check';
import { ProviderRegistry } from './provider.registry';
import { WebhookRoute } from './webhook.route';
import { IntakeBudget } from './intake-budget';
import { RejectionLog } from './rejection-log';

@Module({
  imports: [DiscoveryModule, InboxModule],
  providers: [IngestionService, IngestionMetrics, IntakeBudget, OmitPathsCheck, WebhookRoute, ProviderRegistry, RejectionLog],
  exports: [WebhookRoute, IngestionService, RejectionLog],
})
export class IngestionModule {}
