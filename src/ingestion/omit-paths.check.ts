import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ConfigError } from '../config/config.error';
import { InboxService } from '../inbox/inbox.service';
import { pathsOverlap } from './omit-paths';
import { ProviderRegistry } from './provider.registry';

/**
 * An endpoint's `omit` must not drop what the acceptance or a handler reads: refuse
 * to start with one line naming both, rather than let a handler fail at run time.
 * A reader that declares no paths reads the whole payload.
 */
@Injectable()
export class OmitPathsCheck implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly providers: ProviderRegistry,
    private readonly inbox: InboxService,
  ) {}

  onApplicationBootstrap(): void {
    for (const endpoint of this.config.endpoints.values()) {
      if (!endpoint.omit) continue;
      const readers = [
        { who: `the ${endpoint.provider} acceptance check`, reads: this.providers.get(endpoint.provider).reads },
        ...this.inbox
          .payloadReaders(endpoint.provider, endpoint.eventTypes)
          .map((r) => ({ who: `${r.handler} (${r.type})`, reads: r.reads })),
      ];
      for (const omitted of endpoint.omit) {
        for (const { who, reads } of readers) {
          const prefix = `WEBHOOK_ENDPOINTS_FILE: endpoint "${endpoint.id}": omit "${omitted}"`;
          if (reads === undefined) throw new ConfigError(`${prefix}: ${who} declares no payload paths, so it reads all of them`);
          const read = reads.find((path) => pathsOverlap(omitted, path));
          if (read !== undefined) throw new ConfigError(`${prefix} drops "${read}", which ${who} reads`);
        }
      }
    }
  }
}
