import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';

const { webhooks } = Stripe as unknown as { webhooks: Stripe.Webhooks };

export interface SignedRequest {
  headers: Record<string, string>;
  body: string;
}

/** Signed exactly as Stripe does, by the official SDK's test helper. */
export function signStripe(payload: object | string, secret: string, timestamp = Math.floor(Date.now() / 1000)): SignedRequest {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const signature = webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
  return { body, headers: { 'content-type': 'application/json', 'stripe-signature': signature } };
}

export function stripeEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `evt_${Math.random().toString(36).slice(2, 12)}`,
    object: 'event',
    api_version: '2026-10-28',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type: 'payment_intent.succeeded',
    data: { object: { id: 'pi_123', object: 'payment_intent', amount: 1000, currency: 'eur', metadata: { order_id: 'o1' } } },
    ...overrides,
  };
}

export function signGithub(payload: object, secret: string, delivery: string, event = 'push'): SignedRequest {
  const body = JSON.stringify(payload);
  const hex = createHmac('sha256', secret).update(body).digest('hex');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': `sha256=${hex}`,
      'x-github-delivery': delivery,
      'x-github-event': event,
      'x-github-hook-id': '123',
    },
  };
}

/** Signed by the `standardwebhooks` reference library. */
export function signStandard(payload: object, secret: string, id: string, at = new Date()): SignedRequest {
  const body = JSON.stringify(payload);
  const signature = new Webhook(secret).sign(id, at, body);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    },
  };
}

export function signShopify(payload: object, secret: string, eventId: string, topic = 'orders/paid'): SignedRequest {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64'),
      'x-shopify-event-id': eventId,
      'x-shopify-topic': topic,
      'x-shopify-shop-domain': 'acme.myshopify.com',
    },
  };
}
