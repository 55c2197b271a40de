import { EndpointConfig } from '../../config/app-config';
import { UnauthorizedError } from '../../common/errors';
import { hmacSha256, signingSecret } from '../hmac-signature';
import { SecretForm } from '../../ingestion/secret-form';
import {
  header,
  headerIdentity,
  endpointNamespace,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

/**
 * Shopify: `X-Shopify-Hmac-Sha256` is the base64 HMAC-SHA256 of the body with
 * the app's secret. Headers are unsigned, the event id's as much as the shop's, so
 * the namespace is the shop the event names (`X-Shopify-Shop-Domain`, compared with
 * `expect.shopDomain` when set), the same whether or not the endpoint has `expect`,
 * and shared by a tenant's endpoints that receive the same shop's events (a second
 * subscription, a URL being moved): one event, one row. Versions before 2026-12-07
 * used the endpoint when `expect` was unset; those rows are found under
 * `formerNamespaces`, whether or not the endpoint has `expect` now. A copy one
 * endpoint ignores for its type is taken over by another's (namespaceSpansEndpoints).
 */
/** A shop's domain as Shopify names it (`acme.myshopify.com`): never another endpoint's fallback namespace. */
const SHOP_DOMAIN = /^[A-Za-z0-9][A-Za-z0-9-]{0,100}\.myshopify\.com$/;

@WebhookProviderFor('shopify')
export class ShopifyProvider implements WebhookProvider {
  readonly namespaceSpansEndpoints = true;
  readonly expects = { shopDomain: 'string' } as const;
  readonly reads: readonly string[] = [];

  secretForm(): SecretForm {
    // Keyed with the whole value; the "shpss_" of newer app secrets is public, so only the rest counts.
    return { encoding: 'utf8', prefix: 'shpss_' };
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent {
    const signature = header(request.headers, 'x-shopify-hmac-sha256');
    if (!signature) throw new UnauthorizedError('missing_signature', 'X-Shopify-Hmac-Sha256 header is missing');
    if (!/^[A-Za-z0-9+/]{43}=$/.test(signature.trim())) {
      throw new UnauthorizedError('invalid_signature', 'X-Shopify-Hmac-Sha256 is not a base64 SHA-256 HMAC');
    }
    const secret = signingSecret(endpoint, now, [Buffer.from(signature.trim(), 'base64')], (s) => hmacSha256(s.value, request.rawBody));

    const { eventId, eventType } = headerIdentity(request, ['x-shopify-event-id', 'x-shopify-webhook-id'], 'x-shopify-topic');
    const shopDomain = header(request.headers, 'x-shopify-shop-domain');
    return {
      eventId,
      eventType,
      namespace: SHOP_DOMAIN.test(shopDomain ?? '') ? shopDomain! : endpointNamespace(endpoint),
      verifiedWith: secret.label,
      source: { shopDomain },
    };
  }

  /** Before 2026-12-07 an endpoint without `expect` stored its events under itself (then perhaps got `expect`). */
  formerNamespaces(endpoint: EndpointConfig): string[] {
    return [endpointNamespace(endpoint)];
  }
}
