import { Global, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ClockSkewCheck } from './clock-skew.check';
import { createDataSource, runMigrations } from './data-source';
import { EmbeddedDatabase, startEmbeddedPostgres } from './embedded-postgres';
import { PgNotifications } from './pg-notifications';

/** Holds the embedded PostgreSQL (when there is no DATABASE_URL) so shutdown can stop it last. */
@Injectable()
export class EmbeddedDatabaseHolder {
  database?: EmbeddedDatabase;
}

@Injectable()
class DatabaseShutdown implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');

  constructor(
    private readonly dataSource: DataSource,
    private readonly embedded: EmbeddedDatabaseHolder,
  ) {}

  // Runs after every module's onModuleDestroy: workers and the relay have stopped by now.
  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
    if (this.embedded.database) {
      await this.embedded.database.stop();
      this.logger.log('embedded PostgreSQL stopped');
    }
  }
}

@Global()
@Module({
  providers: [
    EmbeddedDatabaseHolder,
    {
      provide: DataSource,
      inject: [APP_CONFIG, EmbeddedDatabaseHolder],
      useFactory: async (config: AppConfig, embedded: EmbeddedDatabaseHolder) => {
        const logger = new Logger('Database');
        let url = config.databaseUrl;
        if (!url) {
          const dir = join(config.dataDir, 'postgres');
          embedded.database = await startEmbeddedPostgres({ dir, database: 'webhook_inbox' });
          url = embedded.database.url;
          logger.log(`embedded PostgreSQL started in ${dir}`);
        }
        const dataSource = createDataSource(url, config.databasePoolSize);
        await dataSource.initialize();
        await runMigrations(dataSource);
        return dataSource;
      },
    },
    DatabaseShutdown,
    ClockSkewCheck,
    PgNotifications,
  ],
  exports: [DataSource, PgNotifications],
})
export class DatabaseModule {}
