import { Module } from '@nestjs/common';
import { GithubApi } from './github/github-api';
import { GithubProvider } from './github/github.provider';
import { GithubReconciler } from './github/github.reconciler';
import { HmacProvider } from './hmac/hmac.provider';
import { SenderProvider } from './sender/sender.provider';
import { ShopifyProvider } from './shopify/shopify.provider';
import { SlackProvider } from './slack/slack.provider';
import { StandardWebhooksProvider } from './standard/standard.provider';
import { StripeApi } from './stripe/stripe-api';
import { StripeProvider } from './stripe/stripe.provider';
import { StripeReconciler } from './stripe/stripe.reconciler';
import { StripeStateReader } from './stripe/stripe.state-reader';

/**
 * The built-in providers, one folder each: its webhook verifier, and where it has
 * them its API client, state reader (confirm reads), reconciler and CLI signer.
 * Nothing imports these classes: the registries of ingestion, provider-api and
 * reconciliation find them by their decorators, so a provider of your own is a
 * folder with its own module, added to AppModule.
 */
@Module({
  providers: [
    StripeProvider,
    StripeApi,
    StripeStateReader,
    StripeReconciler,
    GithubProvider,
    GithubApi,
    GithubReconciler,
    ShopifyProvider,
    SlackProvider,
    StandardWebhooksProvider,
    HmacProvider,
    SenderProvider,
  ],
})
export class ProvidersModule {}
