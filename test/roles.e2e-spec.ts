import request from 'supertest';
import { signStripe, stripeEvent } from './support/signers';
import { createTestDatabase, TestDatabase } from './support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from './support/test-app';

const SECRET = 'whsec_roles_test_secret';
const endpoints = [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }];

/**
 * An instance without `api` in ROLES (often outside the load balancer and its WAF)
 * serves only /health/* and /metrics: no webhook route, no admin API, no API docs.
 */
describe('An instance serves only its roles', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url, endpoints, env: { ROLES: 'worker,relay,maintenance' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('answers a signed webhook with 404 and writes nothing', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_roles_1' }), SECRET);
    const res = await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
    expect(res.status).toBe(404);
    expect(await db.query('SELECT id FROM webhook_inbox')).toEqual([]);
  });

  it.each([
    ['GET', '/admin/inbox'],
    ['GET', '/admin/stats'],
    ['GET', '/admin/audit'],
    ['POST', '/admin/inbox/replay'],
    ['GET', '/docs'],
    ['GET', '/docs-json'],
    ['GET', '/console'],
    ['GET', '/admin/inbox/1/timeline'],
  ])('answers %s %s with 404, even with an operator token', async (method, path) => {
    const call = method === 'GET' ? request(t.url).get(path) : request(t.url).post(path).send({ filter: {}, dryRun: true, reason: 'x' });
    const res = await call.set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
    expect(res.status).toBe(404);
    expect(await db.query('SELECT id FROM admin_audit')).toEqual([]);
  });

  it('still serves /health/live, /health/ready and /metrics', async () => {
    expect((await request(t.url).get('/health/live')).status).toBe(200);
    expect((await request(t.url).get('/health/ready')).status).toBe(200);
    const metrics = await request(t.url).get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('webhook_inbox_backlog');
  });
});
