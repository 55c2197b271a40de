import { JSON_CONTENT, RequestSigner } from '../request-signer';
import { hmacSha256 } from '../hmac-signature';

export const signGithubRequest: RequestSigner = (secret, body, { eventId, eventType }) => ({
  body,
  headers: {
    ...JSON_CONTENT,
    'x-hub-signature-256': `sha256=${hmacSha256(secret, body).toString('hex')}`,
    'x-github-delivery': eventId,
    'x-github-event': eventType ?? 'ping',
  },
});
