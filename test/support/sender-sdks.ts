import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { Paddle } from '@paddle/paddle-node-sdk';

/**
 * The senders' own verifiers (official SDKs, dev dependencies): a request the
 * tests sign for a sender is first shown to that sender's code, so the tests
 * never agree only with themselves.
 */

// The SDK's crypto is set up by the client's constructor; the key is never used to call Paddle.
const paddle = new Paddle('test_key_for_signature_checks');

/** `@paddle/paddle-node-sdk`: Paddle-Signature `ts=..;h1=..` over `<ts>:<body>` (it also requires a fresh `ts`). */
export function paddleAccepts(body: string, signature: string, secret: string): Promise<boolean> {
  return paddle.webhooks.isSignatureValid(body, secret, signature);
}

/** `@linear/sdk` webhooks helper: Linear-Signature over the body, whose `webhookTimestamp` must be within a minute. */
export function linearAccepts(body: string, signature: string, secret: string): boolean {
  return new LinearWebhookClient(secret).verify(Buffer.from(body), signature);
}
