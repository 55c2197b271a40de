import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { ConfigError } from '../config/config.error';
import { RECONCILER_PROVIDER, Reconciler } from './reconciler';

/** Finds every @ReconcilerFor class at start and refuses a `reconcile` the provider cannot honour. */
@Injectable()
export class ReconcilerRegistry implements OnModuleInit {
  private readonly reconcilers = new Map<string, Reconciler>();

  constructor(
    private readonly discovery: DiscoveryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (!wrapper.metatype || !wrapper.instance) continue;
      const provider = Reflect.getMetadata(RECONCILER_PROVIDER, wrapper.metatype) as string | undefined;
      if (!provider) continue;
      if (this.reconcilers.has(provider)) throw new Error(`two reconcilers for ${provider}`);
      this.reconcilers.set(provider, wrapper.instance as Reconciler);
    }
    for (const endpoint of this.config.endpoints.values()) {
      if (!endpoint.api?.reconcile?.enabled) continue;
      const reconciler = this.reconcilers.get(endpoint.provider);
      const where = `WEBHOOK_ENDPOINTS_FILE: endpoint "${endpoint.id}": api.reconcile`;
      if (!reconciler)
        throw new ConfigError(
          `${where}: provider "${endpoint.provider}" has no reconciler (known: ${[...this.reconcilers.keys()].join(', ')})`,
        );
      const refusal = reconciler.refuse?.(endpoint);
      if (refusal) throw new ConfigError(`${where}: ${refusal}`);
    }
  }

  find(endpoint: EndpointConfig): Reconciler | undefined {
    return endpoint.api ? this.reconcilers.get(endpoint.provider) : undefined;
  }
}
