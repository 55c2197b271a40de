import { DeliveryOptions, DeliveryResult, DestinationFor, OutboxEntry } from './destination';
import { HttpDestination } from './http-destination';

/** Body of an email send: recipient, template and its data. */
export interface EmailPayload {
  to: string;
  template: 'receipt' | 'refund';
  data: { orderId: string; amountMinor: number; currency: string };
}

declare module '../outbox-writer' {
  interface OutboxPayloads {
    email: EmailPayload;
  }
}

/** The email request body `{to, template, data}` from the outbox row alone (byte-identical on resend). */
export function emailRequestBody(entry: OutboxEntry): string {
  const { to, template, data } = entry.payload;
  if (typeof to !== 'string' || !to) throw new Error('no recipient');
  if (typeof template !== 'string' || !template) throw new Error('no template');
  return JSON.stringify({ to, template, data: data ?? {} });
}

/**
 * `POST {EMAIL_URL}` with the Idempotency-Key. The email API has no outcome
 * query, so an uncertain send is resent under the same key and the API dedupes.
 */
@DestinationFor('email', { concurrency: 8 })
export class EmailDestination extends HttpDestination {
  deliver(entry: OutboxEntry, options: DeliveryOptions): Promise<DeliveryResult> {
    return this.post('', entry, () => emailRequestBody(entry), options);
  }
}
