import { Inject, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { Clock } from '../../common/clock';
import { DeliveryOptions, DeliveryResult, Destination, DestinationFor, OperationOutcome, OutboxEntry } from './destination';
import { DestinationHttpClient } from './http-client';

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
@DestinationFor('erp')
export class ErpDestination implements Destination, OnApplicationShutdown {
  readonly concurrency = 16;
  readonly configured: boolean;
  private readonly http?: DestinationHttpClient;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly clock: Clock,
  ) {
    this.configured = Boolean(config.erpUrl);
    if (config.erpUrl) this.http = new DestinationHttpClient(config.erpUrl, this.concurrency, config.relay.timeoutMs);
  }

  deliver(entry: OutboxEntry, { signal }: DeliveryOptions): Promise<DeliveryResult> {
    return this.client().postOperation('/operations', entry.operationKey, () => erpRequestBody(entry), signal, () => this.clock.now());
  }

  async queryOutcome(operationKey: string, { signal }: DeliveryOptions): Promise<OperationOutcome> {
    const reply = await this.client().send('GET', `/operations/${encodeURIComponent(operationKey)}`, {}, undefined, signal);
    if (reply.status === 200) return 'applied';
    if (reply.status === 404) return 'not_applied';
    return 'unknown';
  }

  private client(): DestinationHttpClient {
    if (!this.http) throw new Error('ERP_URL is not set');
    return this.http;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.http?.close();
  }
}
