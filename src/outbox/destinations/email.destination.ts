import { Inject, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { Clock } from '../../common/clock';
import { DeliveryOptions, DeliveryResult, Destination, DestinationFor, OutboxEntry } from './destination';
import { DestinationHttpClient } from './http-client';

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
@DestinationFor('email')
export class EmailDestination implements Destination, OnApplicationShutdown {
  readonly concurrency = 8;
  readonly configured: boolean;
  private readonly http?: DestinationHttpClient;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly clock: Clock,
  ) {
    this.configured = Boolean(config.emailUrl);
    if (config.emailUrl) this.http = new DestinationHttpClient(config.emailUrl, this.concurrency, config.relay.timeoutMs);
  }

  deliver(entry: OutboxEntry, { signal }: DeliveryOptions): Promise<DeliveryResult> {
    if (!this.http) throw new Error('EMAIL_URL is not set');
    return this.http.postOperation('', entry.operationKey, () => emailRequestBody(entry), signal, () => this.clock.now());
  }

  async onApplicationShutdown(): Promise<void> {
    await this.http?.close();
  }
}
