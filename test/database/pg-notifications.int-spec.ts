import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createDataSource } from '../../src/database/data-source';
import { PgNotifications } from '../../src/database/pg-notifications';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';

const settle = () => new Promise((r) => setTimeout(r, 300));

describe('PgNotifications', () => {
  let db: TestDatabase;
  const dataSources: DataSource[] = [];
  const instances: PgNotifications[] = [];
  const instance = async () => {
    const dataSource = await createDataSource(db.url, 2).initialize();
    dataSources.push(dataSource);
    const notifications = new PgNotifications(dataSource);
    instances.push(notifications);
    return notifications;
  };
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const n of instances) await n.onApplicationShutdown();
    for (const d of dataSources) await d.destroy();
    await db?.drop();
  });

  it('wakes the notifying instance once (at once, not again through LISTEN) and every other instance once', async () => {
    const [a, b] = [await instance(), await instance()];
    const woken = { a: 0, b: 0 };
    await a.listen('work', () => woken.a++);
    await b.listen('work', () => woken.b++);
    await settle(); // the wake-up every new listener gets on connecting
    woken.a = woken.b = 0;

    a.notify('work');
    await waitFor('the other instance to wake', async () => woken.b === 1);
    await settle();
    expect(woken).toEqual({ a: 1, b: 1 });
  });

  it('notifyNearest wakes only its own listeners when it has one, and the other instances when it has none', async () => {
    const [a, b] = [await instance(), await instance()];
    const woken = { a: 0, b: 0 };
    await a.listen('nearest', () => woken.a++);
    await b.listen('nearest', () => woken.b++);
    const c = await instance(); // no listener of its own: an instance without the role
    await settle();
    woken.a = woken.b = 0;

    a.notifyNearest('nearest');
    await settle();
    expect(woken).toEqual({ a: 1, b: 0 });

    c.notifyNearest('nearest');
    await waitFor('both listening instances to wake', async () => woken.a === 2 && woken.b === 1);
  });

  it('wakes on a NOTIFY without an origin, as an older version sends it', async () => {
    const c = await instance();
    let woken = 0;
    await c.listen('older', () => woken++);
    await settle();
    woken = 0;
    const client = new Client({ connectionString: db.url });
    await client.connect();
    await client.query(`SELECT pg_notify('older', NULL)`);
    await client.end();
    await waitFor('the wake-up', async () => woken === 1);
  });
});
