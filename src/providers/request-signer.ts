export interface SignedRequest {
  headers: Record<string, string>;
  body: string;
}

export interface SignOptions {
  /** Event id for providers that carry it in a header (GitHub, Shopify, Standard Webhooks). */
  eventId: string;
  /** Event type for providers that carry it in a header (GitHub, Shopify). */
  eventType?: string;
  at: Date;
}

/** Signs a body the way one provider does (the CLI's `send`, tests, the bench): the real headers, the real scheme. */
export type RequestSigner = (secret: string, body: string, options: SignOptions) => SignedRequest;

export const JSON_CONTENT = { 'content-type': 'application/json' } as const;
