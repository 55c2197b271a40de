import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const SECRET = 'whsec_expired_rotation_secret_0123';

/**
 * An endpoint whose every secret is past its notAfter (a rotation's old secret left as the only
 * one, or a notAfter put on the wrong entry) can verify nothing: every webhook of the endpoint is
 * 401 `invalid_signature`. Found by an adversarial review: it started without a word. It is said
 * at start, as an error; not refused, since the date passes on its own and a restart after it
 * must not take the other endpoints down.
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

  it('is named at start in one error line, and the other endpoints serve', async () => {
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        {
          id: 'stripe-old',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: '2026-10', value: SECRET, notAfter: '2026-01-01T00:00:00Z' }],
        },
        { id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] },
      ],
    });
    const lines = t.logs.lines.filter((l) => l.includes('past its notAfter'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('stripe-old');
    expect(lines[0]).not.toContain(SECRET);
    const signed = signStripe(stripeEvent({ id: 'evt_other_endpoint' }), SECRET);
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).status).toBe(200);
  });
});
