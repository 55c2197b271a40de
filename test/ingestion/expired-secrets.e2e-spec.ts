import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const SECRET = 'whsec_expired_rotation_secret_0123';

/**
 * An endpoint whose every secret is past its notAfter (a rotation's old secret left as the only
 * one, or a notAfter put on the wrong entry) can verify nothing: every webhook of the endpoint
 * would be 401 `invalid_signature`. As much a configuration mistake as an unset secret variable,
 * it is refused at start. Found by an adversarial review; it started and refused every event.
 */
describe('an endpoint whose secrets are all past notAfter', () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('is refused at start (it could never verify a webhook)', async () => {
    let startError: Error | undefined;
    try {
      t = await startTestApp({
        databaseUrl: db.url,
        endpoints: [
          {
            id: 'stripe-acme',
            provider: 'stripe',
            tenantId: 'acme',
            secrets: [{ label: '2026-10', value: SECRET, notAfter: '2026-01-01T00:00:00Z' }],
          },
        ],
      });
    } catch (error) {
      startError = error as Error;
    }
    if (t) {
      // What happens instead: the start succeeds and every genuinely signed event is refused.
      const signed = signStripe(stripeEvent({ id: 'evt_after_rotation' }), SECRET);
      const res = await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
      expect({ started: true, status: res.status, reason: res.body.reason }).toEqual({ started: false });
    }
    expect(startError?.message).toMatch(/stripe-acme.*notAfter|notAfter.*stripe-acme/);
  });
});
