import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AuditModule } from '../audit/audit.module';
import { HandlerRegistry } from './handler.registry';
import { InboxAdminRepository } from './inbox-admin.repository';
import { InboxAdminService } from './inbox-admin.service';
import { InboxRepository } from './inbox.repository';
import { IdentityKeys } from './identity-keys';
import { InboxPayloads } from './inbox-payloads';
import { PayloadKeyCheck } from './payload-key.check';
import { InboxService } from './inbox.service';
import { InboxRetentionService } from './inbox-retention.service';
import { PayloadKeysService } from './payload-keys.service';
import { PayloadDays } from './payload-days';
import { InboxEventProcessor } from './inbox-event.processor';
import { AttemptFailures } from './attempt-failures';
import { ConfirmStep } from './confirm-step';
import { InboxTraces } from './inbox.traces';
import { InboxWorker } from './inbox-worker';
import { WORKER_INTAKE } from './worker-intake.port';
import { InboxWorkerScheduler } from './inbox-worker.scheduler';
import { WorkerFaults } from './worker-faults';
import { WorkerLimits } from './worker-limits';
import { AcceptToDoneMetrics, WorkerMetrics } from './worker.metrics';
import { ProviderApiModule } from '../provider-api/provider-api.module';

@Module({
  imports: [DiscoveryModule, AuditModule, ProviderApiModule],
  providers: [
    InboxRepository,
    IdentityKeys,
    InboxPayloads,
    PayloadKeyCheck,
    InboxService,
    InboxRetentionService,
    PayloadDays,
    PayloadKeysService,
    InboxAdminRepository,
    InboxAdminService,
    HandlerRegistry,
    InboxEventProcessor,
    ConfirmStep,
    AttemptFailures,
    InboxTraces,
    InboxWorker,
    { provide: WORKER_INTAKE, useExisting: InboxWorker },
    InboxWorkerScheduler,
    WorkerFaults,
    WorkerMetrics,
    AcceptToDoneMetrics,
    WorkerLimits,
  ],
  exports: [InboxService, IdentityKeys, InboxRetentionService, PayloadKeysService, InboxAdminService, WorkerLimits],
})
export class InboxModule {}
