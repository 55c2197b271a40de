import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/config.error';
import { WEBHOOK_PROVIDER_NAME, WebhookProvider } from './webhook-provider';

/** Finds every @WebhookProviderFor class at start and checks the endpoints file names only known ones. */
@Injectable()
export class ProviderRegistry implements OnModuleInit {
  private readonly providers = new Map<string, WebhookProvider>();

  constructor(
    private readonly discovery: DiscoveryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (!wrapper.metatype || !wrapper.instance) continue;
      const name = Reflect.getMetadata(WEBHOOK_PROVIDER_NAME, wrapper.metatype) as string | undefined;
      if (!name) continue;
      if (this.providers.has(name)) throw new ConfigError(`webhook provider "${name}" is registered twice`);
      this.providers.set(name, wrapper.instance as WebhookProvider);
    }
    for (const endpoint of this.config.endpoints.values()) {
      const provider = this.providers.get(endpoint.provider);
      if (!provider) {
        throw new ConfigError(
          `WEBHOOK_ENDPOINTS_FILE: endpoint "${endpoint.id}": unknown provider "${endpoint.provider}" (known: ${[...this.providers.keys()].join(', ')})`,
        );
      }
      // A typo here would silently ignore every event of the endpoint: refuse to start instead.
      for (const [key, value] of Object.entries(endpoint.expect ?? {})) {
        const type = provider.expects[key];
        const known = Object.keys(provider.expects).join(', ') || 'none';
        if (!type) throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: endpoint "${endpoint.id}": expect.${key} is not known to ${endpoint.provider} (known: ${known})`);
        if (type === 'boolean' ? typeof value !== 'boolean' : typeof value === 'boolean') {
          throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: endpoint "${endpoint.id}": expect.${key} must be a ${type}`);
        }
      }
    }
  }

  get(name: string): WebhookProvider {
    const provider = this.providers.get(name);
    if (!provider) throw new Error(`no webhook provider "${name}"`);
    return provider;
  }
}
