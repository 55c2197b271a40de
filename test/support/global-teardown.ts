import { Client } from 'pg';

export default async function globalTeardown(): Promise<void> {
  const embedded = (globalThis as any).__EMBEDDED_PG__;
  if (embedded) {
    await embedded.stop();
    return;
  }
  // External server: drop what this run created.
  const admin = new Client({ connectionString: process.env.TEST_SERVER_URL });
  await admin.connect();
  const run = process.env.TEST_RUN_ID;
  const { rows } = await admin.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`wi\\_%${run}%`]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  await admin.end();
}
