import { signGithubRequest } from './github/github.signer';
import { RequestSigner } from './request-signer';
import { signShopifyRequest } from './shopify/shopify.signer';
import { signSlackRequest } from './slack/slack.signer';
import { signStandardRequest } from './standard/standard.signer';
import { signStripeRequest } from './stripe/stripe.signer';

/** The built-in providers' signers, by provider name (`hmac` senders sign with their own libraries). */
export const REQUEST_SIGNERS: Readonly<Record<string, RequestSigner>> = {
  stripe: signStripeRequest,
  github: signGithubRequest,
  standard: signStandardRequest,
  shopify: signShopifyRequest,
  slack: signSlackRequest,
};
