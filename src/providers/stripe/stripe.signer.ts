import Stripe from 'stripe';
import { JSON_CONTENT, RequestSigner } from '../request-signer';

const { webhooks } = Stripe as unknown as { webhooks: Stripe.Webhooks };

/** `Stripe-Signature` as the official SDK builds it for tests. */
export const signStripeRequest: RequestSigner = (secret, body, { at }) => ({
  body,
  headers: {
    ...JSON_CONTENT,
    'stripe-signature': webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Math.floor(at.getTime() / 1000) }),
  },
});
