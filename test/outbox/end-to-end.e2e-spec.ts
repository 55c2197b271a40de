import request from 'supertest';
import { FakeDestination } from '../support/fake-destinations';
import { signStripe } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestAppWithDestinations } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { ENDPOINTS, paymentIntentEvent, STRIPE_SECRET } from '../inbox/worker-fixtures';

describe('end to end on the running service: webhook -> order -> ERP and email', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;

  useTestAppWithDestinations({ endpoints: ENDPOINTS, env: { ROLES: 'api,worker,relay' } }, (started) => ({ db, t, erp, email } = started));

  async function post(event: Record<string, unknown>): Promise<request.Response> {
    const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    return request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
  }

  it('a signed payment_intent.succeeded (sent twice, plus a second event for the same payment) -> one ERP operation and one email', async () => {
    const created = await request(t.url)
      .post('/admin/orders')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ tenantId: 'acme', id: 'e2e-1', totalMinor: 4200, currency: 'eur', customerEmail: 'buyer@example.com', reason: 'e2e' });
    expect(created.status).toBeLessThan(300);

    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'e2e-1', amount: 4200, id: 'evt_e2e_1' });
    expect((await post(event)).body).toMatchObject({ status: 'accepted' });
    expect((await post(event)).body).toMatchObject({ status: 'duplicate' });
    expect((await post({ ...event, id: 'evt_e2e_1_again' })).body).toMatchObject({ status: 'accepted' });

    const erpKey = 'erp:order-paid:acme:e2e-1';
    const emailKey = 'email:receipt:acme:e2e-1';
    await waitFor(
      'both deliveries',
      async () => {
        const rows = await db.query(`SELECT status FROM outbox WHERE status <> 'delivered'`);
        const inbox = await db.query(`SELECT status FROM webhook_inbox WHERE status NOT IN ('done', 'ignored')`);
        return erp.effects.has(erpKey) && email.effects.has(emailKey) && rows.length === 0 && inbox.length === 0;
      },
      15_000,
    );

    expect([...erp.effects.keys()]).toEqual([erpKey]);
    expect([...email.effects.keys()]).toEqual([emailKey]);
    expect(erp.posts().map((r) => r.headers['idempotency-key'])).toEqual([erpKey]);
    expect(email.posts().map((r) => r.headers['idempotency-key'])).toEqual([emailKey]);
    expect(JSON.parse(erp.posts()[0].body)).toMatchObject({
      operationKey: erpKey,
      type: 'order.paid',
      tenantId: 'acme',
      orderId: 'e2e-1',
      amountMinor: 4200,
      currency: 'eur',
      paymentId: 'pi_e2e-1',
    });
    expect(JSON.parse(email.posts()[0].body)).toMatchObject({ to: 'buyer@example.com' });
    expect(await db.query(`SELECT operation_key, status FROM outbox ORDER BY operation_key`)).toEqual([
      { operation_key: emailKey, status: 'delivered' },
      { operation_key: erpKey, status: 'delivered' },
    ]);
  });
});
