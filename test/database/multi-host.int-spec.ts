import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { isDatabaseUnavailable } from '../../src/common/database-errors';
import { createDataSource } from '../../src/database/data-source';
import { freePort } from '../../src/database/embedded-postgres';
import { PgNotifications } from '../../src/database/pg-notifications';
import { TestDatabase, useTestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';

/**
 * DATABASE_URL with several hosts (issue 35). One real server plays every part: a port nothing
 * listens on is a primary that is gone; a database with default_transaction_read_only = on
 * answers as a standby does to libpq's read-write check (SHOW transaction_read_only).
 */
describe('DATABASE_URL with several hosts', () => {
  let db: TestDatabase;
  useTestDatabase((created) => (db = created));
  const opened: DataSource[] = [];
  afterEach(async () => {
    for (const ds of opened.splice(0)) if (ds.isInitialized) await ds.destroy();
  });

  /** db.url with `hosts` in front of its own host, and `query` appended. */
  const urlWith = (hosts: string[], query = ''): string => {
    const u = new URL(db.url);
    const auth = u.username ? `${u.username}${u.password ? `:${u.password}` : ''}@` : '';
    return `${u.protocol}//${auth}${[...hosts, u.host].join(',')}${u.pathname}${query}`;
  };
  const open = (url: string, poolSize = 2): DataSource => {
    const ds = createDataSource(url, poolSize);
    opened.push(ds);
    return ds;
  };
  const databaseName = () => new URL(db.url).pathname.slice(1);
  const pids = async (ds: DataSource) => Number((await ds.query('SELECT pg_backend_pid() AS pid'))[0].pid);

  it('a refused first host: sessions go to the next one', async () => {
    const ds = await open(urlWith([`127.0.0.1:${await freePort()}`], '?target_session_attrs=read-write')).initialize();
    expect(await ds.query('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('an IPv6 host in brackets: its sessions connect (the socket gets the address without them)', async () => {
    const u = new URL(db.url);
    const auth = u.username ? `${u.username}${u.password ? `:${u.password}` : ''}@` : '';
    // The IPv4-mapped form of the server's own address: IPv6 syntax, whatever the server listens on.
    const v4 = /^\d+\.\d+\.\d+\.\d+$/.test(u.hostname) ? u.hostname : '127.0.0.1';
    const ds = await open(
      `${u.protocol}//${auth}[::ffff:${v4}]:${u.port || 5432}${u.pathname}?target_session_attrs=read-write`,
    ).initialize();
    expect(await ds.query('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('no writable server: "database unavailable" (503) until one is, then correct without a restart', async () => {
    await db.query('CREATE TABLE failover_probe (id int)');
    const ds = await open(urlWith([`127.0.0.1:${await freePort()}`], '?target_session_attrs=read-write')).initialize();
    await ds.query('INSERT INTO failover_probe VALUES (1)');

    // The only server left becomes read-only (as a standby is) and drops every session.
    await db.query(`ALTER DATABASE ${databaseName()} SET default_transaction_read_only = on`);
    await db.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    const errors: unknown[] = [];
    for (let i = 0; i < 3; i++)
      errors.push(
        await ds.query('INSERT INTO failover_probe VALUES (2)').then(
          () => undefined,
          (e: unknown) => e,
        ),
      );
    expect(errors.map(isDatabaseUnavailable)).toEqual([true, true, true]);
    expect((errors[2] as Error).message).toMatch(/^no writable PostgreSQL server: 127\.0\.0\.1:\d+ ECONNREFUSED; .+ read-only$/);

    await db.query(`ALTER DATABASE ${databaseName()} SET default_transaction_read_only = off`);
    await ds.query('INSERT INTO failover_probe VALUES (3)');
    expect(await db.query('SELECT id FROM failover_probe ORDER BY id')).toEqual([{ id: 1 }, { id: 3 }]);
  });

  it('a session that finds itself read-only (25006) is dropped, and the next write gets a writable one', async () => {
    await db.query('CREATE TABLE read_only_probe (id int)');
    const ds = await open(urlWith([], '?target_session_attrs=read-write'), 1).initialize();
    const pool = (ds.driver as PostgresDriver).master as Pool;
    const client = await pool.connect();
    await client.query('SET default_transaction_read_only = on'); // as if its server had become a standby
    const before = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    client.release();

    const error = await ds.query('INSERT INTO read_only_probe VALUES (1)').then(
      () => undefined,
      (e: { code?: string }) => e,
    );
    expect({ code: (error as { code?: string }).code, unavailable: isDatabaseUnavailable(error) }).toEqual({
      code: '25006',
      unavailable: true,
    });
    await ds.query('INSERT INTO read_only_probe VALUES (2)');
    expect(await pids(ds)).not.toBe(before);
    expect(await db.query('SELECT id FROM read_only_probe')).toEqual([{ id: 2 }]);
  });

  it('the LISTEN connection follows the host list too', async () => {
    const ds = await open(urlWith([`127.0.0.1:${await freePort()}`], '?target_session_attrs=read-write')).initialize();
    const notifications = new PgNotifications(ds);
    let woken = 0;
    try {
      await notifications.listen('failover_work', () => woken++);
      await waitFor('the listener to connect', async () => woken === 1); // every new listener is woken once on connecting
      await db.query("SELECT pg_notify('failover_work', 'elsewhere')");
      await waitFor('the notification through LISTEN', async () => woken === 2);
    } finally {
      await notifications.onApplicationShutdown();
    }
  });
});
