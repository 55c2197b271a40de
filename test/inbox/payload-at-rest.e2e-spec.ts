import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { createDataSource, runMigrations } from '../../src/database/data-source';
import { dumpDatabase, filesContaining, startOwnPostgres } from '../support/database-dump';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { signStripe } from '../support/signers';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { ENDPOINTS, paymentIntentEvent, STRIPE_SECRET } from './worker-fixtures';

const KEYS = `k1:${randomBytes(32).toString('base64')}`;

/**
 * Scenario 34. Each case runs on an embedded PostgreSQL of its own, so its data
 * directory (heap, indexes, WAL) can be read byte by byte on either CI path.
 * The marker sits in data.object.metadata, the object the payment handler reads
 * order_id from (an `omit` of it would be refused), and is copied nowhere else:
 * order, outbox entries and audit rows hold only ids, amounts and the e-mail address.
 */
describe.each([
  ['on', { PAYLOAD_KEYS: KEYS }],
  ['off', {}],
])('payloads at rest with encryption %s [scenario 34]', (mode, keys) => {
  const dir = join(__dirname, '..', '..', '.data', `at-rest-${mode}-${randomBytes(4).toString('hex')}`);
  const marker = `MARKER-${randomBytes(8).toString('hex')}`;
  let pg: { url: string; stop(): Promise<void> };
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;

  beforeAll(async () => {
    pg = await startOwnPostgres(dir, 'at_rest');
    const dataSource = createDataSource(pg.url, 2);
    await dataSource.initialize();
    await runMigrations(dataSource);
    await dataSource.destroy();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({
      databaseUrl: pg.url,
      endpoints: ENDPOINTS,
      env: { ROLES: 'api,worker,relay', ERP_URL: erp.url, EMAIL_URL: email.sendUrl, ...keys },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await pg?.stop();
  });

  it(`the marker is ${mode === 'on' ? 'nowhere' : 'found'} in a dump and in the data directory after processing and delivery`, async () => {
    const created = await request(t.url)
      .post('/admin/orders')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ tenantId: 'acme', id: 'rest-1', totalMinor: 4200, currency: 'eur', customerEmail: 'buyer@example.com', reason: 'at rest' });
    expect(created.status).toBe(201);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'rest-1', amount: 4200 });
    (event.data as any).object.metadata.customer_note = marker;
    const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).body).toMatchObject({
      status: 'accepted',
    });

    const client = new Client({ connectionString: pg.url });
    await client.connect();
    try {
      await waitFor(
        'the event processed and both operations delivered',
        async () => {
          const open = await client.query(
            `SELECT (SELECT count(*) FROM webhook_inbox WHERE status <> 'done') + (SELECT count(*) FROM outbox WHERE status <> 'delivered') AS n,
                  (SELECT count(*) FROM outbox) AS entries`,
          );
          return Number(open.rows[0].n) === 0 && Number(open.rows[0].entries) === 2;
        },
        30_000,
      );
      expect(erp.requests.length + email.requests.length).toBeGreaterThanOrEqual(2);
      // The operator's view opens the payload in memory.
      const [{ id }] = (await client.query('SELECT id FROM webhook_inbox')).rows;
      const view = await request(t.url).get(`/admin/inbox/${id}`).set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
      expect(view.body.payload.data.object.metadata.customer_note).toBe(marker);
      await client.query('CHECKPOINT');
    } finally {
      await client.end();
    }

    const dump = await dumpDatabase(pg.url);
    const files = filesContaining(dir, marker);
    if (mode === 'on') {
      expect({ inDump: dump.text.includes(marker), files }).toEqual({ inDump: false, files: [] });
      expect(dump.text).toContain('buyer@example.com'); // the dump does hold the rows (a documented clear column)
    } else {
      expect(dump.text).toContain(marker);
      expect(files.some((f) => f.includes('pg_wal'))).toBe(true);
      expect(files.some((f) => f.includes(`${join(dir, 'base')}`))).toBe(true);
    }
  }, 120_000);
});
