import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventReads } from './event-reads';
import { ReadBudget } from './read-budget';
import { StateReaderRegistry } from './state-reader.registry';

/**
 * Reading the providers' APIs: the shared read budget and the state readers' registry
 * (confirm reads). The SDK clients and readers themselves live in src/providers/.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [ReadBudget, StateReaderRegistry, EventReads],
  exports: [EventReads, ReadBudget, StateReaderRegistry],
})
export class ProviderApiModule {}
