import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventReads } from './event-reads';
import { ReadBudget } from './read-budget';
import { StateReaderRegistry } from './state-reader.registry';
import { StripeApi } from './stripe/stripe-api';
import { StripeStateReader } from './stripe/stripe.state-reader';

/** The providers' APIs: SDK clients, the shared read budget, state readers (confirm reads). */
@Module({
  imports: [DiscoveryModule],
  providers: [StripeApi, ReadBudget, StateReaderRegistry, StripeStateReader, EventReads],
  exports: [EventReads, StripeApi, ReadBudget, StateReaderRegistry],
})
export class ProviderApiModule {}
