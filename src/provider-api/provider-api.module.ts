import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventReads } from './event-reads';
import { ReadBudget } from './read-budget';
import { StateReaderRegistry } from './state-reader.registry';
import { GithubApi } from './github/github-api';
import { StripeApi } from './stripe/stripe-api';
import { StripeStateReader } from './stripe/stripe.state-reader';

/** The providers' APIs: SDK clients, the shared read budget, state readers (confirm reads). */
@Module({
  imports: [DiscoveryModule],
  providers: [StripeApi, GithubApi, ReadBudget, StateReaderRegistry, StripeStateReader, EventReads],
  exports: [EventReads, StripeApi, GithubApi, ReadBudget, StateReaderRegistry],
})
export class ProviderApiModule {}
