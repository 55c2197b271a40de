import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { createDataSource, runMigrations } from '../../src/database/data-source';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';

/**
 * One PostgreSQL for the run: the server at DATABASE_URL, else an embedded one.
 * Migrations are applied once to a template database; each test file then gets
 * its own copy (CREATE DATABASE ... TEMPLATE), so files run in parallel.
 */
export default async function globalSetup(): Promise<void> {
  const run = randomBytes(4).toString('hex');
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres({
      dir: join(__dirname, '..', '..', '.data', `test-postgres-${run}`),
      database: 'postgres',
      persistent: false,
    });
    (globalThis as any).__EMBEDDED_PG__ = embedded;
    serverUrl = embedded.url;
  }
  const template = `wi_template_${run}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();

  const templateUrl = withDatabase(serverUrl, template);
  const dataSource = createDataSource(templateUrl, 2);
  await dataSource.initialize();
  await runMigrations(dataSource);
  await dataSource.destroy();

  process.env.TEST_SERVER_URL = serverUrl;
  process.env.TEST_TEMPLATE_DB = template;
  process.env.TEST_RUN_ID = run;
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
