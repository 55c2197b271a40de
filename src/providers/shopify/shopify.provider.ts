import { EndpointConfig } from '../../config/app-config';
import { UnauthorizedError } from '../../common/errors';
import { hmacSha256, signingSecret } from '../hmac-signature';
import { SecretForm } from '../../ingestion/secret-form';
import {
  header,
  headerIdentity,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

/**
 * Shopify: `X-Shopify-Hmac-Sha256` is the base64 HMAC-SHA256 of the body with
 * the app's secret. Headers are unsigned, so the namespace is the endpoint, and
 * the shop domain header is only compared with `expect.shopDomain`. Not the
 * configured `expect.shopDomain` either: adding it to a live endpoint would have
 * made Shopify's retries of earlier events new events. Versions before 2026-12-07
 * did so; their rows are found under `formerNamespaces`.
 */
@WebhookProviderFor('shopify')
export class ShopifyProvider implements WebhookProvider {
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
    return {
      eventId,
      eventType,
      namespace: `endpoint-${endpoint.id}`,
      verifiedWith: secret.label,
      source: { shopDomain: header(request.headers, 'x-shopify-shop-domain') },
    };
  }

  formerNamespaces(endpoint: EndpointConfig): string[] {
    return endpoint.expect?.shopDomain !== undefined ? [String(endpoint.expect.shopDomain)] : [];
  }
}
