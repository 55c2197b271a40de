import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { ProviderStateReader, STATE_READER_PROVIDER } from './state-reader';

/** Finds every @StateReaderFor class at start; one per provider. */
@Injectable()
export class StateReaderRegistry implements OnModuleInit {
  private readonly readers = new Map<string, ProviderStateReader>();

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (!wrapper.metatype || !wrapper.instance) continue;
      const provider = Reflect.getMetadata(STATE_READER_PROVIDER, wrapper.metatype) as string | undefined;
      if (!provider) continue;
      if (this.readers.has(provider)) throw new Error(`two state readers for ${provider}`);
      this.readers.set(provider, wrapper.instance as ProviderStateReader);
    }
  }

  find(provider: string): ProviderStateReader | undefined {
    return this.readers.get(provider);
  }
}
