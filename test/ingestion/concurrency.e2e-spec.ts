import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

const SECRET = 'whsec_concurrency_secret';
const endpoints = [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', value: SECRET }] }];

describe('Scenario 6: 50 concurrent copies of one event across two app instances', () => {
  let db: TestDatabase;
  let apps: TestApp[];

  beforeAll(async () => {
    db = await createTestDatabase();
    apps = await Promise.all([0, 1].map(() => startTestApp({ databaseUrl: db.url, endpoints })));
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await db.drop();
  });

  it('leaves one row, answers every copy 200, and counts every delivery', async () => {
    const event = stripeEvent({ id: 'evt_race' });
    // Half the copies are provider retries: same id, fresh timestamp and signature.
    const now = Math.floor(Date.now() / 1000);
    const copies = Array.from({ length: 50 }, (_, i) => signStripe(event, SECRET, now - (i % 2)));
    const responses = await Promise.all(
      copies.map((signed, i) =>
        request(apps[i % 2].url)
          .post('/webhooks/stripe-acme')
          .set(signed.headers)
          .send(signed.body),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    const statuses = responses.map((r) => r.body.status);
    expect(statuses.filter((s) => s === 'accepted')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(49);

    const rows = await db.query('SELECT event_id, deliveries, digest_conflicts FROM webhook_inbox');
    expect(rows).toEqual([{ event_id: 'evt_race', deliveries: 50, digest_conflicts: 0 }]);
  });

  it('accepts 200 distinct events sent concurrently, each exactly once', async () => {
    const events = Array.from({ length: 200 }, (_, i) => signStripe(stripeEvent({ id: `evt_many_${i}` }), SECRET));
    const responses = await Promise.all(
      events.map((signed, i) =>
        request(apps[i % 2].url)
          .post('/webhooks/stripe-acme')
          .set(signed.headers)
          .send(signed.body),
      ),
    );
    expect(responses.every((r) => r.status === 200 && r.body.status === 'accepted')).toBe(true);
    const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM webhook_inbox WHERE event_id LIKE 'evt_many_%'`);
    expect(count).toBe(200);
  });

  it('answers a body PostgreSQL refuses with 400 without failing the commit it shared', async () => {
    // JSON.parse reads 1e999999 as Infinity; jsonb refuses it (numeric overflow).
    const bad = signStripe('{"id":"evt_overflow","type":"payment_intent.succeeded","n":1e999999}', SECRET);
    const good = Array.from({ length: 30 }, (_, i) => signStripe(stripeEvent({ id: `evt_mixed_${i}` }), SECRET));
    const all = [...good.slice(0, 15), bad, ...good.slice(15)];
    const responses = await Promise.all(
      all.map((signed) => request(apps[0].url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)),
    );
    expect(responses[15].status).toBe(400);
    expect(responses[15].body.reason).toBe('unsupported_json');
    expect(responses.filter((r) => r.status === 200 && r.body.status === 'accepted')).toHaveLength(30);
    const rows = await db.query(`SELECT event_id FROM webhook_inbox WHERE event_id LIKE 'evt_mixed_%' OR event_id = 'evt_overflow'`);
    expect(rows).toHaveLength(30);
  });
});
