import { FakeStripeApi } from '../support/fake-stripe-api';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import {
  chargeRefundedEvent,
  createOrder,
  inboxRow,
  orderRow,
  outboxRows,
  paymentIntentEvent,
  postStripe,
  STRIPE_SECRET,
  TENANT,
  worker,
} from '../inbox/worker-fixtures';

const API_KEY = 'sk_test_review_0123456789SECRETKEY';

/**
 * With `api.confirm`, the body cannot skip the provider's word. Found by an adversarial review;
 * both tests failed before: a `charge.refunded` with no charge id got no read and refunded the
 * order on the body alone; one 429 with `Retry-After: 9999999` parked an event for 115 days.
 */
describe('confirm reads cannot be skipped or stalled by what the sender controls', () => {
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
      env: { STRIPE_API_KEY_ACME: API_KEY, WORKER_MAX_ATTEMPTS: '3', PROVIDER_API_READS_PER_SECOND: '1000' },
    });
  });
  afterAll(async () => {
    await t.close();
    await stripe.stop();
    await db.drop();
  });

  it('a charge.refunded without a charge id is not refunded on the body alone', async () => {
    await createOrder(t, 'r1', 1000, 'eur');
    stripe.addPayment('pi_r1', { amount: 1000, currency: 'eur', orderId: 'r1' }); // paid, nothing refunded
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'r1', amount: 1000 }));
    await worker(t).runOnce();
    expect(await orderRow(db, 'r1')).toMatchObject({ status: 'paid' });

    const refund = chargeRefundedEvent({ orderId: 'r1', amount: 1000 });
    delete (refund.data as { object: Record<string, unknown> }).object.id; // no charge id: nothing to read
    await postStripe(t, refund);
    await worker(t).runOnce();

    const row = await inboxRow(db, refund.id as string);
    // The read finds nothing to read (no call made), and the event is quarantined: no refund on the body alone.
    expect(stripe.callsTo('/v1/charges/').length).toBe(0);
    expect(row.confirmation).toMatchObject({ object: 'charge', found: false });
    expect(await orderRow(db, 'r1')).toMatchObject({ status: 'paid' });
    expect((await outboxRows(db, 'r1')).map((r) => r.operation_key)).not.toContain('erp:order-refunded:acme:r1');
  });

  it("a provider's Retry-After is bounded: one 429 does not park the event for months", async () => {
    await createOrder(t, 'r2', 1000, 'eur');
    stripe.addPayment('pi_r2', { amount: 1000, currency: 'eur', orderId: 'r2' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'r2', amount: 1000 });
    await postStripe(t, event);
    stripe.throttleNext(1, 9_999_999); // Retry-After: 9999999 (115 days), from Stripe or a proxy in front of it
    const now = t.clock.now().getTime();
    await worker(t).runOnce();
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    const days = (new Date(row.next_attempt_at).getTime() - now) / 86_400_000;
    // A day at most, as the relay's Retry-After.
    expect(days).toBeLessThan(1.01);
  });
});
