import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { IngestionModule } from '../ingestion/ingestion.module';
import { ProviderApiModule } from '../provider-api/provider-api.module';
import { ReconcilerRegistry } from './reconciler.registry';
import { ReconciliationRunner } from './reconciliation-runner';
import { ReconciliationMetrics } from './reconciliation.metrics';
import { ReconciliationRepository } from './reconciliation.repository';
import { ReconciliationScheduler } from './reconciliation.scheduler';
import { ReconciliationService } from './reconciliation.service';

/**
 * Reconciliation (`maintenance` role, and on demand): brings in the events the
 * provider has and the inbox lacks, through the acceptance path. Owns
 * `reconciliation_cursors` and `reconciliation_runs`.
 */
@Module({
  imports: [DiscoveryModule, AuditModule, InboxModule, IngestionModule, ProviderApiModule],
  providers: [
    ReconciliationRepository,
    ReconcilerRegistry,
    ReconciliationRunner,
    ReconciliationMetrics,
    ReconciliationService,
    ReconciliationScheduler,
  ],
  exports: [ReconciliationService, ReconciliationScheduler],
})
export class ReconciliationModule {}
