import { Global, Logger, Module } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { KeyRing } from './key-ring';
import { ConfiguredKeySource, PAYLOAD_KEY_SOURCE, PayloadKeySource } from './key-source';

/** The payload key ring, loaded once at start from its source (a leaf: it imports nothing of the product). */
@Global()
@Module({
  providers: [
    { provide: PAYLOAD_KEY_SOURCE, inject: [APP_CONFIG], useFactory: (config: AppConfig) => new ConfiguredKeySource(config.payloadKeys) },
    {
      provide: KeyRing,
      inject: [APP_CONFIG, PAYLOAD_KEY_SOURCE],
      useFactory: async (config: AppConfig, source: PayloadKeySource) => {
        const ring = new KeyRing(await source.load());
        const logger = new Logger('KeyRing');
        if (ring.enabled) logger.log({ keys: ring.ids, current: ring.currentId }, 'payloads are stored encrypted');
        else if (config.production) {
          logger.warn('no PAYLOAD_KEYS: payloads are stored in clear; a dump, replica or backup of the database holds them');
        }
        return ring;
      },
    },
  ],
  exports: [KeyRing],
})
export class CryptoModule {}
