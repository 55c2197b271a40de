import { Inject, Injectable } from '@nestjs/common';
import Stripe from 'stripe';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../../config/app-config';
import { ProviderAnswerError, ProviderUnavailableError, retryAfterMs } from '../../provider-api/provider-api.errors';

/** The SDK's client of one endpoint's key, and the calls it made (for a run's record and the figures). */
@Injectable()
export class StripeApi {
  private readonly clients = new Map<string, Stripe>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The official SDK, pointed at `api.baseUrl` when set; retries are ours (the SDK's would sleep inside a lease). */
  client(endpoint: EndpointConfig): Stripe {
    const api = endpoint.api;
    if (!api) throw new Error(`endpoint ${endpoint.id} has no api key`);
    let client = this.clients.get(endpoint.id);
    if (!client) {
      const url = api.baseUrl;
      client = new Stripe(api.key.reveal(), {
        maxNetworkRetries: 0,
        timeout: this.config.providerApi.timeoutMs,
        telemetry: false,
        appInfo: { name: 'webhook-inbox' },
        ...(url && {
          protocol: url.protocol.slice(0, -1) as 'http' | 'https',
          host: url.hostname,
          port: url.port || (url.protocol === 'https:' ? 443 : 80),
        }),
      });
      this.clients.set(endpoint.id, client);
    }
    return client;
  }
}

/** Connected-account requests carry the account; the platform's own do not. */
export function accountOption(account: unknown): Stripe.RequestOptions | undefined {
  return typeof account === 'string' && account !== '' && account !== 'platform' ? { stripeAccount: account } : undefined;
}

/** True when Stripe answered that the object does not exist. */
export function isMissing(error: unknown): boolean {
  return error instanceof Stripe.errors.StripeInvalidRequestError && (error.statusCode === 404 || error.code === 'resource_missing');
}

/**
 * A Stripe error that is no answer about the object, as ProviderUnavailableError;
 * anything else is returned unchanged. Stripe's messages are never kept: a refused
 * key's message quotes part of the key.
 */
export function unavailableOf(error: unknown): unknown {
  if (!(error instanceof Stripe.errors.StripeError)) return error;
  const status = error.statusCode;
  if (error instanceof Stripe.errors.StripeRateLimitError || status === 429) {
    return new ProviderUnavailableError('rate_limited', 429, retryAfterMs(error.headers?.['retry-after']));
  }
  if (error instanceof Stripe.errors.StripeAuthenticationError || error instanceof Stripe.errors.StripePermissionError) {
    return new ProviderUnavailableError('credentials_refused', status);
  }
  if (error instanceof Stripe.errors.StripeConnectionError) return new ProviderUnavailableError('unavailable');
  if (status === undefined || status >= 500) return new ProviderUnavailableError('unavailable', status);
  return new ProviderAnswerError(status, error.code);
}
