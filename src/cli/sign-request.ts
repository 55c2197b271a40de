import { createHmac, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';

const { webhooks } = Stripe as unknown as { webhooks: Stripe.Webhooks };

export interface SignedRequest {
  headers: Record<string, string>;
  body: string;
}

export interface SignOptions {
  /** Event id for providers that carry it in a header (GitHub, Shopify, Standard Webhooks). */
  eventId?: string;
  /** Event type for providers that carry it in a header (GitHub, Shopify). */
  eventType?: string;
  at?: Date;
}

/** Signs a body the way each provider does, so a test event looks exactly like the real thing. */
export function signRequest(provider: string, secret: string, body: string, options: SignOptions = {}): SignedRequest {
  const at = options.at ?? new Date();
  const id = options.eventId ?? randomUUID();
  const json = { 'content-type': 'application/json' };
  switch (provider) {
    case 'stripe':
      return {
        body,
        headers: {
          ...json,
          'stripe-signature': webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Math.floor(at.getTime() / 1000) }),
        },
      };
    case 'github':
      return {
        body,
        headers: {
          ...json,
          'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
          'x-github-delivery': id,
          'x-github-event': options.eventType ?? 'ping',
        },
      };
    case 'standard':
      return {
        body,
        headers: {
          ...json,
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': new Webhook(secret).sign(id, at, body),
        },
      };
    case 'shopify':
      return {
        body,
        headers: {
          ...json,
          'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64'),
          'x-shopify-event-id': id,
          'x-shopify-topic': options.eventType ?? 'orders/paid',
        },
      };
    case 'slack': {
      const timestamp = String(Math.floor(at.getTime() / 1000));
      return {
        body,
        headers: {
          ...json,
          'x-slack-request-timestamp': timestamp,
          'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(body).digest('hex')}`,
        },
      };
    }
    default:
      throw new Error(`cannot sign for provider "${provider}"`);
  }
}
