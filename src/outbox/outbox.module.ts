import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AuditModule } from '../audit/audit.module';
import { DestinationGates } from './destination-gates';
import { DestinationRegistry } from './destinations/destination.registry';
import { EmailDestination } from './destinations/email.destination';
import { ErpDestination } from './destinations/erp.destination';
import { OutboxAdminRepository } from './outbox-admin.repository';
import { OutboxAdminService } from './outbox-admin.service';
import { OutboxRelay } from './outbox-relay';
import { OutboxRelayScheduler } from './outbox-relay.scheduler';
import { OutboxRepository } from './outbox.repository';
import { OutboxService } from './outbox.service';
import { OutboxTraces } from './outbox.traces';
import { RELAY_INTAKE } from './relay-intake.port';
import { OutboxWriter } from './outbox-writer';
import { RelayMetrics } from './relay.metrics';

@Module({
  imports: [DiscoveryModule, AuditModule],
  providers: [
    OutboxWriter,
    OutboxRepository,
    OutboxService,
    OutboxAdminRepository,
    OutboxAdminService,
    DestinationRegistry,
    DestinationGates,
    ErpDestination,
    EmailDestination,
    OutboxRelay,
    { provide: RELAY_INTAKE, useExisting: OutboxRelay },
    OutboxTraces,
    OutboxRelayScheduler,
    RelayMetrics,
  ],
  exports: [OutboxWriter, OutboxService, OutboxAdminService],
})
export class OutboxModule {}
