import { DeliveryOptions, DeliveryResult, DestinationFor, OperationOutcome, OutboxEntry } from './destination';
import { HttpDestination } from './http-destination';

/** Body of an ERP operation: everything the relay needs, so a resend is identical. */
export interface ErpOperationPayload {
  operationKey: string;
  type: 'order.paid' | 'order.refunded';
  tenantId: string;
  orderId: string;
  /** Integer minor units. */
  amountMinor: number;
  /** Lower-case ISO 4217. */
  currency: string;
  paymentId: string;
  /** ISO time of the business change (the provider event's `created`). */
  occurredAt: string;
}

declare module '../outbox-writer' {
  interface OutboxPayloads {
    erp: ErpOperationPayload;
  }
}

/**
 * The request body of an ERP operation, in the documented field order, from
 * the outbox row alone: a resend is byte-identical to the first request.
 */
export function erpRequestBody(entry: OutboxEntry): string {
  const p = entry.payload;
  const amountMinor = typeof p.amountMinor === 'string' ? Number(p.amountMinor) : p.amountMinor;
  if (!Number.isSafeInteger(amountMinor)) throw new Error('amountMinor is not an integer');
  return JSON.stringify({
    operationKey: entry.operationKey,
    type: p.type ?? entry.operationType,
    tenantId: p.tenantId ?? entry.tenantId,
    orderId: p.orderId,
    amountMinor,
    currency: typeof p.currency === 'string' ? p.currency.toLowerCase() : p.currency,
    paymentId: p.paymentId,
    occurredAt: p.occurredAt,
  });
}

/** `POST {ERP_URL}/operations`; outcome query `GET {ERP_URL}/operations/<key>` (200 applied, 404 not). */
@DestinationFor('erp', { concurrency: 16 })
export class ErpDestination extends HttpDestination {
  deliver(entry: OutboxEntry, options: DeliveryOptions): Promise<DeliveryResult> {
    return this.post('/operations', entry, () => erpRequestBody(entry), options);
  }

  async queryOutcome(operationKey: string, options: DeliveryOptions): Promise<OperationOutcome> {
    const status = await this.getStatus(`/operations/${encodeURIComponent(operationKey)}`, options);
    return status === 200 ? 'applied' : status === 404 ? 'not_applied' : 'unknown';
  }
}
