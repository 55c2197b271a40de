import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { DestinationSettings, settingsFor, urlVariable } from '../../config/destinations';
import { Clock } from '../../common/clock';
import {
  DeliveryOptions,
  DeliveryResult,
  Destination,
  DESTINATION_DEFAULTS,
  DESTINATION_NAME,
  OperationOutcome,
  OutboxEntry,
} from './destination';
import { DestinationHttpClient } from './http-client';

/**
 * An HTTP destination configured entirely by `DESTINATION_<NAME>_*` (URL,
 * timeout, concurrency, credentials, signing, client certificate): a subclass
 * says only how one entry becomes a request. The name and defaults come from
 * its `@DestinationFor(name, defaults)`.
 */
@Injectable()
export abstract class HttpDestination implements Destination, OnApplicationShutdown {
  readonly name: string;
  readonly settings: DestinationSettings;
  readonly configured: boolean;
  private readonly http?: DestinationHttpClient;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    protected readonly clock: Clock,
  ) {
    this.name = Reflect.getMetadata(DESTINATION_NAME, new.target) as string;
    this.settings = settingsFor(
      config.destinations.get(this.name),
      Reflect.getMetadata(DESTINATION_DEFAULTS, new.target) ?? {},
      config.relay.timeoutMs,
    );
    this.configured = Boolean(this.settings.url);
    if (this.settings.url) this.http = new DestinationHttpClient({ ...this.settings, url: this.settings.url });
  }

  get concurrency(): number {
    return this.settings.concurrency;
  }

  abstract deliver(entry: OutboxEntry, options: DeliveryOptions): Promise<DeliveryResult>;

  queryOutcome?(operationKey: string, options: DeliveryOptions): Promise<OperationOutcome>;

  /** POSTs `body()` to `path` under the entry's key, with the outcome rules (a body that cannot be built is dead). */
  protected post(path: string, entry: OutboxEntry, body: () => string, options: DeliveryOptions): Promise<DeliveryResult> {
    return this.client().postOperation(path, entry.operationKey, body, options, () => this.clock.now());
  }

  /** GET `path` (an outcome query): its status only. */
  protected async getStatus(path: string, { signal, traceparent }: DeliveryOptions): Promise<number> {
    const headers: Record<string, string> = traceparent ? { traceparent } : {};
    return (await this.client().send('GET', path, headers, undefined, signal)).status;
  }

  private client(): DestinationHttpClient {
    if (!this.http) throw new Error(`${urlVariable(this.name)} is not set`);
    return this.http;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.http?.close();
  }
}
