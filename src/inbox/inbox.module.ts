import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HandlerRegistry } from './handler.registry';
import { InboxRepository } from './inbox.repository';
import { InboxService } from './inbox.service';
import { InboxEventProcessor } from './inbox-event.processor';
import { InboxWorker } from './inbox-worker';
import { InboxWorkerScheduler } from './inbox-worker.scheduler';
import { WorkerFaults } from './worker-faults';
import { AcceptToDoneMetrics, WorkerMetrics } from './worker.metrics';

@Module({
  imports: [DiscoveryModule],
  providers: [
    InboxRepository,
    InboxService,
    HandlerRegistry,
    InboxEventProcessor,
    InboxWorker,
    InboxWorkerScheduler,
    WorkerFaults,
    WorkerMetrics,
    AcceptToDoneMetrics,
  ],
  exports: [InboxService],
})
export class InboxModule {}
