import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { TcpProxy } from '../support/tcp-proxy';

const SECRET = 'whsec_database_down_secret';
const endpoints = [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', value: SECRET }] }];

describe('Scenario 10: database down', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const target = new URL(db.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    t = await startTestApp({ databaseUrl: proxy.proxied(db.url), endpoints });
  });
  afterAll(async () => {
    await proxy.up();
    await t.close();
    await proxy.down();
    await db.drop();
  });

  it('answers 503 with Retry-After, never 200, and accepts the provider retry once the database is back', async () => {
    const event = stripeEvent({ id: 'evt_down' });
    await proxy.down();

    const signed = signStripe(event, SECRET);
    const responses = await Promise.all(
      [1, 2, 3].map(() => request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)),
    );
    for (const r of responses) {
      expect(r.status).toBe(503);
      expect(r.body.reason).toBe('database_unavailable');
      expect(r.headers['retry-after']).toBeDefined();
      expect(JSON.stringify(r.body)).not.toMatch(/ECONN|postgres|terminated/i);
    }

    await proxy.up();
    const retry = signStripe(event, SECRET);
    let after = await request(t.url).post('/webhooks/stripe-acme').set(retry.headers).send(retry.body);
    // A pooled connection cut by the outage may fail once more before the pool replaces it.
    for (let i = 0; i < 5 && after.status === 503; i++) {
      after = await request(t.url).post('/webhooks/stripe-acme').set(retry.headers).send(retry.body);
    }
    expect(after.status).toBe(200);
    expect(after.body.status).toBe('accepted');
    expect(await db.query('SELECT event_id, deliveries FROM webhook_inbox')).toEqual([{ event_id: 'evt_down', deliveries: 1 }]);
  });
});
