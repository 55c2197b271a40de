import { JSON_CONTENT, RequestSigner } from '../request-signer';
import { hmacSha256 } from '../hmac-signature';

export const signSlackRequest: RequestSigner = (secret, body, { at }) => {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  return {
    body,
    headers: {
      ...JSON_CONTENT,
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': `v0=${hmacSha256(secret, `v0:${timestamp}:`, body).toString('hex')}`,
    },
  };
};
