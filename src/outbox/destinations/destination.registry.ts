import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { discoverNamed } from '../../common/discovery';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/config.error';
import { urlVariable } from '../../config/destinations';
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
    const found = discoverNamed<Destination>(
      this.discovery,
      DESTINATION_NAME,
      (name) => new ConfigError(`destination "${name}" is registered twice`),
    );
    for (const [name, destination] of found) {
      if (destination.configured) {
        this.destinations.set(name, destination);
        continue;
      }
      if (this.config.production)
        throw new ConfigError(`${urlVariable(name)}: required when NODE_ENV=production (destination "${name}" is registered)`);
      this.logger.warn({ destination: name }, `destination "${name}" has no URL: using the built-in dev sink`);
      this.destinations.set(name, new DevSinkDestination(name, destination.settings));
    }
    // Settings for a destination nobody registered: a typo, or a deploy before the code that needs them.
    for (const name of this.config.destinations.keys()) {
      if (!this.destinations.has(name)) {
        throw new ConfigError(
          `DESTINATION_${name.toUpperCase()}_*: no destination "${name}" is registered (registered: ${this.names().join(', ')})`,
        );
      }
    }
  }

  get(name: string): Destination | undefined {
    return this.destinations.get(name);
  }

  names(): string[] {
    return [...this.destinations.keys()];
  }
}
