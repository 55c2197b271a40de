import { FakeStripeApi } from '../support/fake-stripe-api';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import {
  chargeRefundedEvent,
  createOrder,
  inboxRow,
  orderRow,
  paymentIntentEvent,
  postStripe,
  STRIPE_SECRET,
  TENANT,
  worker,
} from './worker-fixtures';

const API_KEY = 'sk_test_waiting_0123456789KEY';

/**
 * A refund waiting for its payment on an endpoint that confirms by a read of Stripe's API
 * (api.confirm): every look read the Charge again, a few hundred reads of the key's shared
 * budget over a 72-hour wait; a look deferred for its confirm read cleared the 'waiting' mark
 * and put the refund back into the oldest pending age.
 */
describe('a waiting refund on a confirming endpoint', () => {
  let db: TestDatabase;
  let stripe: FakeStripeApi;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    stripe = await new FakeStripeApi(API_KEY).start();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        {
          id: 'stripe-acme',
          provider: 'stripe',
          tenantId: TENANT,
          secrets: [{ label: 'current', value: STRIPE_SECRET }],
          api: { env: 'STRIPE_API_KEY_ACME', baseUrl: stripe.url },
        },
      ],
      env: { STRIPE_API_KEY_ACME: API_KEY, WORKER_MAX_ATTEMPTS: '10', PROVIDER_API_READS_PER_SECOND: '1000' },
    });
  });
  afterAll(async () => {
    await t.close();
    await stripe.stop();
    await db.drop();
  });

  it('reads the provider API once while it waits, then applies with that reading when its payment lands', async () => {
    await createOrder(t, 'w1', 1000, 'eur');
    stripe.addPayment('pi_w1', { amount: 1000, currency: 'eur', orderId: 'w1', refunded: 1000 });
    const refund = chargeRefundedEvent({ orderId: 'w1', amount: 1000 });
    await postStripe(t, refund); // its payment_intent.succeeded is late (Stripe retries it)
    const received = (await inboxRow(db, refund.id as string)).received_at.getTime();
    let looks = 0;
    // Every look of the worker until the refund has waited 24 hours.
    while (t.clock.now().getTime() - received < 24 * 3600_000) {
      const row = await inboxRow(db, refund.id as string);
      expect(row).toMatchObject({ status: 'pending', attempts: 0 });
      const due = row.next_attempt_at.getTime() + 1;
      if (due > t.clock.now().getTime()) t.clock.advance(due - t.clock.now().getTime());
      await worker(t).runOnce();
      looks++;
    }
    expect(looks).toBeGreaterThan(50);
    expect(stripe.callsTo('/v1/charges/ch_w1')).toHaveLength(1);

    // The payment lands (Stripe's retry); the refund's next look applies it, with the reading of its first.
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'w1', amount: 1000 }));
    await worker(t).runOnce();
    t.clock.advance(15 * 60_000);
    await worker(t).runOnce();
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'done', attempts: 0 });
    expect((await orderRow(db, 'w1')).status).toBe('refunded');
    expect(stripe.callsTo('/v1/charges/ch_w1')).toHaveLength(1);
  }, 120_000);

  it("a look deferred for its confirm read (provider down) keeps the refund marked 'waiting'", async () => {
    await createOrder(t, 'w2', 1000, 'eur');
    stripe.addPayment('pi_w2', { amount: 1000, currency: 'eur', orderId: 'w2', refunded: 1000 });
    const refund = chargeRefundedEvent({ orderId: 'w2', amount: 1000 });
    await postStripe(t, refund);
    t.clock.advance(3600_000);
    await worker(t).runOnce();
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'pending', status_reason: 'waiting' });
    // No reading stored (its endpoint began to confirm during the wait): the next look reads, and Stripe is down.
    await db.query(`UPDATE webhook_inbox SET confirmation = NULL WHERE event_id = $1`, [refund.id]);
    stripe.mode = 'down';
    try {
      t.clock.advance(3600_000);
      await worker(t).runOnce();
    } finally {
      stripe.mode = 'up';
    }
    const row = await inboxRow(db, refund.id as string);
    expect({ status: row.status, status_reason: row.status_reason, last_error: row.last_error }).toEqual({
      status: 'pending',
      status_reason: 'waiting',
      last_error: expect.any(String),
    });
  });
});
