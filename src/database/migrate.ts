import { join } from 'node:path';
import { loadDatabaseConfig } from '../config/load-config';
import { createDataSource, runMigrations } from './data-source';
import { startEmbeddedPostgres } from './embedded-postgres';

/**
 * `npm run migration:run` (in an image: `node dist/src/database/migrate.js`): applies
 * pending migrations to DATABASE_URL or the embedded database. Needs nothing else.
 */
async function main(): Promise<void> {
  const config = loadDatabaseConfig(process.env);
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({ dir: join(config.dataDir, 'postgres'), database: 'webhook_inbox' });
  const dataSource = createDataSource(config.databaseUrl ?? embedded!.url, 2);
  try {
    await dataSource.initialize();
    await runMigrations(dataSource);
    const applied = await dataSource.query('SELECT name FROM schema_migrations ORDER BY id');
    process.stdout.write(`migrations applied: ${applied.map((m: { name: string }) => m.name).join(', ')}\n`);
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy();
    await embedded?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`migration failed: ${(error as Error).message}\n`);
  process.exit(1);
});
