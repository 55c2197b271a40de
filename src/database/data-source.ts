import type { EventEmitter } from 'node:events';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresConnectionOptions';
import { MIGRATIONS } from '../../migrations';
import { parseDatabaseUrl } from '../config/database-url';
import { DatabaseHosts, MultiHostClient } from './multi-host-client';
import { watchReplicationNotices } from './replication-notice';

export const POOL_SIZE = 20;

/** `url` may list several hosts (libpq syntax): sessions then go to the writable one (multi-host-client.ts). */
export function createDataSource(url: string, poolSize = POOL_SIZE): DataSource {
  const target = parseDatabaseUrl(url);
  // One host: pg's own client, as configured. Several: one search shared by the pool and the LISTEN connection.
  const multiHost = target.multiHost ? { Client: MultiHostClient, databaseHosts: new DatabaseHosts(target) } : {};
  return new DataSource({
    type: 'postgres',
    url: target.urlFor(target.hosts[0]),
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    entities: [],
    poolSize,
    extra: {
      // Fail fast when the database is down: the webhook answer becomes 503, not a hang.
      connectionTimeoutMillis: 5_000,
      query_timeout: 30_000,
      keepAlive: true,
      // Idle connections are kept (pg-pool closes them after 10 s by default): the pool is bounded
      // (DATABASE_POOL_SIZE), and a new connection costs PostgreSQL a process, its catalog caches
      // and every prepared statement planned again. At moderate rates, bursts used to reopen them.
      idleTimeoutMillis: 0,
      application_name: 'webhook-inbox',
      // Short statements only: JIT compiling (tens of ms) never pays here, and the planner's guesses
      // for the fair claim's walk over tenants (one per tenant, sized as if there were a hundred)
      // sit near its threshold.
      options: '-c jit=off',
      // A statement is sent while the ones before it are still out (each with its own Sync, so a
      // failure outside a transaction touches no other): runInTransaction sends BEGIN
      // with the first statement and COMMIT with the last ones, in one round trip each.
      pipeline: true,
      // A client emits a server-side disconnect (e.g. 57P01 at shutdown) on itself; while it is
      // checked out between queries nothing may be listening, and an unhandled 'error' event
      // kills the process. Its next query fails and is handled (503 or retry).
      onConnect: (client: EventEmitter) => {
        client.on('error', () => undefined);
        watchReplicationNotices(client);
      },
      ...multiHost,
    },
  });
}

/** A connection of its own outside the pool (LISTEN), to the server the pool's sessions go to. */
export function createDedicatedClient(dataSource: DataSource): Client {
  const options = dataSource.options as PostgresConnectionOptions;
  const config = { connectionString: options.url, connectionTimeoutMillis: 5_000, keepAlive: true };
  const databaseHosts = (options.extra as { databaseHosts?: DatabaseHosts }).databaseHosts;
  return databaseHosts ? new MultiHostClient({ ...config, databaseHosts }) : new Client(config);
}

const MIGRATION_LOCK = 7_311_042_117; // any constant: serialises migrations across instances

/** Applies pending migrations once, even when several instances start together. */
export async function runMigrations(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    // Polled rather than waited for: a session blocked in pg_advisory_lock holds a snapshot,
    // and a CREATE INDEX CONCURRENTLY run by the lock's holder would wait for it forever.
    while (!(await runner.query('SELECT pg_try_advisory_lock($1) AS ok', [MIGRATION_LOCK]))[0].ok) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await runner.release();
  }
}
