import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

describe('smoke', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: 'whsec_test' }] }],
    });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('accepts', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_1' }), 'whsec_test');
    const res = await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_1' });
    expect(await db.query('SELECT status, verified_with FROM webhook_inbox')).toEqual([{ status: 'pending', verified_with: 'current' }]);
  });
});
