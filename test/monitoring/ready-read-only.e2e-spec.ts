import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';

const SECRET = 'whsec_ready_read_only_secret_0123';

/**
 * Readiness is false until the service can accept durably. A database that answers but refuses
 * writes (a demoted primary, a standby a single-host URL still resolves to,
 * default_transaction_read_only, a provider's read-only mode on a full disk) accepts no webhook:
 * every one is 503, so /health/ready is 503 too. Found by an adversarial review; it said ready.
 */
describe('/health/ready on a read-only database', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    { endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }] },
    (started) => ({ db, t } = started),
  );

  it('is not ready while every webhook is refused because the server is read-only', async () => {
    const ok = signStripe(stripeEvent({ id: 'evt_before_ro' }), SECRET);
    expect((await request(t.url).post('/webhooks/stripe-acme').set(ok.headers).send(ok.body)).status).toBe(200);

    const [{ name }] = await db.query(`SELECT current_database() AS name`);
    await db.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    // The app's pooled sessions reconnect and pick the setting up (as after a failover or a restart).
    await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name]);
    try {
      const refused: number[] = [];
      for (let i = 0; i < 3; i++) {
        const signed = signStripe(stripeEvent({ id: `evt_ro_${i}` }), SECRET);
        refused.push((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).status);
      }
      // The service cannot accept durably: every webhook is 503 ...
      expect(refused).toEqual([503, 503, 503]);
      // ... so readiness must say so.
      const ready: number[] = [];
      for (let i = 0; i < 3; i++) ready.push((await request(t.url).get('/health/ready')).status);
      expect(ready).toEqual([503, 503, 503]);
    } finally {
      await db.query(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
    }
  });
});
