import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EndpointConfig, EndpointSecret } from '../config/app-config';
import { UnauthorizedError } from '../common/errors';
import { liveSecrets } from '../ingestion/webhook-provider';

/**
 * The steps every HMAC sender shares (GitHub, Shopify, Slack, Standard Webhooks and
 * the configured `hmac` provider): which live secret signed the request, and whether
 * its signed timestamp is recent. Each provider keeps only what is its own: where the
 * signature is, what is signed, where the id and type are.
 */

export function hmacSha256(key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant-time equality of two byte strings of possibly different lengths. */
export function safeEqual(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * The live secret of the endpoint whose MAC (`macOf`) equals one of the `given`
 * signatures, compared in constant time; 401 `invalid_signature` when none does.
 */
export function signingSecret(
  endpoint: EndpointConfig,
  now: Date,
  given: readonly Buffer[],
  macOf: (secret: EndpointSecret) => Buffer,
): EndpointSecret {
  const secret = liveSecrets(endpoint, now).find((s) => {
    const expected = macOf(s);
    return given.some((signature) => safeEqual(expected, signature));
  });
  if (!secret) throw new UnauthorizedError('invalid_signature', 'no configured secret verifies the signature');
  return secret;
}

/** A timestamp header in whole seconds, before verification: 401 `invalid_timestamp` when missing or not a number. */
export function secondsHeader(value: string | undefined, name: string): string {
  if (!value || !/^\d{1,12}$/.test(value)) throw new UnauthorizedError('invalid_timestamp', `${name} is missing or not a number`);
  return value;
}

/** After verification: 401 `timestamp_out_of_tolerance` when the signed time `atMs` is outside the endpoint's tolerance. */
export function requireRecent(atMs: number, endpoint: EndpointConfig, now: Date, what: string): void {
  if (Math.abs(now.getTime() - atMs) > endpoint.toleranceSeconds * 1000) {
    throw new UnauthorizedError('timestamp_out_of_tolerance', `${what} is outside the tolerance`);
  }
}
