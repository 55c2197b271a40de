import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { InboxModule } from '../inbox/inbox.module';
import { IngestionMetrics } from './ingestion.metrics';
import { IngestionService } from './ingestion.service';
import { OmitPathsCheck } from './omit-paths.check';
import { GithubProvider } from './providers/github.provider';
import { HmacProvider } from './providers/hmac.provider';
import { ProviderRegistry } from './providers/provider.registry';
import { ShopifyProvider } from './providers/shopify.provider';
import { SlackProvider } from './providers/slack.provider';
import { StandardWebhooksProvider } from './providers/standard.provider';
import { StripeProvider } from './providers/stripe.provider';
import { WebhookRoute } from './webhook.route';
import { IntakeBudget } from './intake-budget';

@Module({
  imports: [DiscoveryModule, InboxModule],
  providers: [
    IngestionService,
    IngestionMetrics,
    IntakeBudget,
    OmitPathsCheck,
    WebhookRoute,
    ProviderRegistry,
    StripeProvider,
    GithubProvider,
    StandardWebhooksProvider,
    ShopifyProvider,
    SlackProvider,
    HmacProvider,
  ],
  exports: [WebhookRoute, IngestionService],
})
export class IngestionModule {}
