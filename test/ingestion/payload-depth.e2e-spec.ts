import request from 'supertest';
import { signStripe } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp } from '../support/test-app';

const SECRET = 'whsec_payload_depth_secret';
const endpoints = [
  { id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', value: SECRET }] },
  { id: 'stripe-omit', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', value: SECRET }], omit: ['data.object.shipping'] },
];

/** `levels` arrays nested in each other: JSON.stringify cannot build it past a few thousand, so it is written as text. */
const nestedArrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/** A Stripe event whose data.object is `levels` arrays deep: the omit walk descends every array it meets. */
function deepEvent(id: string, levels: number): string {
  return `{"id":"${id}","object":"event","type":"payment_intent.succeeded","created":1,"livemode":false,"data":{"object":${nestedArrays(levels)}}}`;
}

describe('Payload nesting depth', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints }, (started) => ({ db, t } = started));

  beforeEach(async () => {
    await db.query('TRUNCATE webhook_inbox');
  });

  const post = (endpoint: string, body: string) => {
    const signed = signStripe(body, SECRET);
    return request(t.url).post(`/webhooks/${endpoint}`).set(signed.headers).send(signed.body);
  };

  it.each([
    ['stripe-acme', 20_000],
    ['stripe-omit', 20_000],
    ['stripe-omit', 600],
  ])('a signed body nested past the bound on %s (%d levels): 400 payload_too_deep, nothing written', async (endpoint, levels) => {
    const res = await post(endpoint, deepEvent(`evt_deep_${levels}`, levels));
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 400, reason: 'payload_too_deep' });
    expect(await db.query('SELECT id FROM webhook_inbox')).toEqual([]);
  });

  it('a body at the bound is accepted, its omit applied', async () => {
    // 256 levels in all: the event object, data, and 254 arrays.
    const res = await post('stripe-omit', deepEvent('evt_at_bound', 254));
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('accepted');
  });

  it('a stored payload nested 10,000 deep: the admin view is 200 with the payload reported unreadable', async () => {
    // Stored before the bound existed (or by hand): jsonb takes it (PostgreSQL 15's default stack stops
    // near 12,000 levels), JSON.stringify fails from about 6,000.
    const [{ id }] = await db.query<{ id: string }>(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sha256, verified_with, status)
       VALUES ('acme:stripe:acct', 'evt_stored_deep', 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded', $1::jsonb, repeat('a', 64), 'k1', 'done')
       RETURNING id::text`,
      [deepEvent('evt_stored_deep', 10_000)],
    );
    const res = await request(t.url)
      .get(`/admin/inbox/${id}`)
      .set({ Authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ eventId: 'evt_stored_deep', payload: null, payloadUnreadable: 'payload_too_deep' });
  });
});
