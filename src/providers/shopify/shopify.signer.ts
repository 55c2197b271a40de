import { JSON_CONTENT, RequestSigner } from '../request-signer';
import { hmacSha256 } from '../hmac-signature';

export const signShopifyRequest: RequestSigner = (secret, body, { eventId, eventType }) => ({
  body,
  headers: {
    ...JSON_CONTENT,
    'x-shopify-hmac-sha256': hmacSha256(secret, body).toString('base64'),
    'x-shopify-event-id': eventId,
    'x-shopify-topic': eventType ?? 'orders/paid',
  },
});
