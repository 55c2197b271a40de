import { randomUUID } from 'node:crypto';
import { SignedRequest } from '../providers/request-signer';
import { REQUEST_SIGNERS } from '../providers/signers';

export type { SignedRequest } from '../providers/request-signer';

export interface SignOptions {
  /** Event id for providers that carry it in a header (GitHub, Shopify, Standard Webhooks); a random UUID by default. */
  eventId?: string;
  /** Event type for providers that carry it in a header (GitHub, Shopify). */
  eventType?: string;
  at?: Date;
}

/** Signs a body the way each provider does, so a test event looks exactly like the real thing. */
export function signRequest(provider: string, secret: string, body: string, options: SignOptions = {}): SignedRequest {
  const sign = REQUEST_SIGNERS[provider];
  if (!sign) throw new Error(`cannot sign for provider "${provider}"`);
  return sign(secret, body, { eventId: options.eventId ?? randomUUID(), eventType: options.eventType, at: options.at ?? new Date() });
}
