import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp } from '../support/test-app';

const SECRET = 'whsec_cache_control_secret';
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/** Admin answers carry payloads and personal data: no cache (browser, proxy) may keep any of them. */
describe('Cache-Control: no-store on every /admin answer', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    { endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k', value: SECRET }] }] },
    (started) => ({ db, t } = started),
  );

  it('on reads with a payload, lists, actions, errors and refusals alike', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_cache', type: 'charge.refunded' }), SECRET);
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).status).toBe(200);
    const [{ id }] = await db.query(`SELECT id::text FROM webhook_inbox WHERE event_id = 'evt_cache'`);
    const answers = [
      await request(t.url).get(`/admin/inbox/${id}`).set(op),
      await request(t.url).get('/admin/inbox').set(op),
      await request(t.url).get('/admin/session').set(op),
      await request(t.url).post(`/admin/inbox/${id}/quarantine`).set(op).send({ reason: 'cache test' }),
      await request(t.url).get('/admin/inbox/987654321').set(op),
      await request(t.url).get('/admin/inbox'),
    ];
    expect(answers[0].body.payload).toMatchObject({ id: 'evt_cache' });
    expect(answers.map((r) => [r.status, r.headers['cache-control']])).toEqual([
      [200, 'no-store'],
      [200, 'no-store'],
      [200, 'no-store'],
      [200, 'no-store'],
      [404, 'no-store'],
      [401, 'no-store'],
    ]);
  });
});
