import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/config.error';
import { Destination, DESTINATION_NAME } from './destination';
import { DevSinkDestination } from './dev-sink.destination';

/** Finds every @DestinationFor class at start; unconfigured ones go to the dev sink outside production. */
@Injectable()
export class DestinationRegistry implements OnModuleInit {
  private readonly logger = new Logger(DestinationRegistry.name);
  private readonly destinations = new Map<string, Destination>();

  constructor(
    private readonly discovery: DiscoveryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (!wrapper.metatype || !wrapper.instance) continue;
      const name = Reflect.getMetadata(DESTINATION_NAME, wrapper.metatype) as string | undefined;
      if (!name) continue;
      if (this.destinations.has(name)) throw new ConfigError(`destination "${name}" is registered twice`);
      let destination = wrapper.instance as Destination;
      if (!destination.configured) {
        if (this.config.production) throw new ConfigError(`destination "${name}": no URL configured`);
        this.logger.warn({ destination: name }, `destination "${name}" has no URL: using the built-in dev sink`);
        destination = new DevSinkDestination(name);
      }
      this.destinations.set(name, destination);
    }
  }

  get(name: string): Destination | undefined {
    return this.destinations.get(name);
  }

  names(): string[] {
    return [...this.destinations.keys()];
  }
}
