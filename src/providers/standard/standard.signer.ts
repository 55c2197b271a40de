import { Webhook } from 'standardwebhooks';
import { JSON_CONTENT, RequestSigner } from '../request-signer';

/** Signed by the reference library. */
export const signStandardRequest: RequestSigner = (secret, body, { eventId, at }) => ({
  body,
  headers: {
    ...JSON_CONTENT,
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(eventId, at, body),
  },
});
