import { signRequest, SignedRequest } from '../../src/cli/sign-request';

export type { SignedRequest };

/** Signed exactly as Stripe does, by the official SDK's test helper. */
export function signStripe(payload: object | string, secret: string, timestamp = Math.floor(Date.now() / 1000)): SignedRequest {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return signRequest('stripe', secret, body, { at: new Date(timestamp * 1000) });
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

/**
 * A Stripe event of any type, as Stripe sends it: `object` is its `data.object`; a fresh
 * `evt_` id, `created` in whole seconds (Stripe's resolution), test mode, no account
 * unless given (a Connect event carries the connected account's id).
 */
export function stripeEventOf(
  type: string,
  object: Record<string, unknown>,
  options: { id?: string; created?: number; account?: string; livemode?: boolean } = {},
): Record<string, unknown> {
  return {
    id: options.id ?? `evt_${Math.random().toString(36).slice(2, 12)}`,
    object: 'event',
    api_version: '2026-10-28',
    created: options.created ?? Math.floor(Date.now() / 1000),
    livemode: options.livemode ?? false,
    ...(options.account && { account: options.account }),
    type,
    data: { object },
  };
}

export function signGithub(payload: object, secret: string, delivery: string, event = 'push'): SignedRequest {
  const signed = signRequest('github', secret, JSON.stringify(payload), { eventId: delivery, eventType: event });
  return { ...signed, headers: { ...signed.headers, 'x-github-hook-id': '123' } };
}

/** Signed by the `standardwebhooks` reference library. */
export function signStandard(payload: object, secret: string, id: string, at = new Date()): SignedRequest {
  return signRequest('standard', secret, JSON.stringify(payload), { eventId: id, at });
}

export function signShopify(payload: object, secret: string, eventId: string, topic = 'orders/paid'): SignedRequest {
  const signed = signRequest('shopify', secret, JSON.stringify(payload), { eventId, eventType: topic });
  return { ...signed, headers: { ...signed.headers, 'x-shopify-shop-domain': 'acme.myshopify.com' } };
}
