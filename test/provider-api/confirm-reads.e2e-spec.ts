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

const API_KEY = 'sk_test_confirm_0123456789SECRETKEY';

describe('confirm reads: the provider decides before paid and refunded', () => {
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
      env: {
        STRIPE_API_KEY_ACME: API_KEY,
        WORKER_MAX_ATTEMPTS: '3',
        RETRY_BASE_MS: '1000',
        RETRY_MAX_MS: '4000',
        PROVIDER_API_READS_PER_SECOND: '1000',
        LOG_LEVEL: 'debug',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await stripe.stop();
    await db.drop();
  });
  afterEach(() => {
    stripe.mode = 'up';
    stripe.keys.clear();
    stripe.keys.add(API_KEY);
  });

  /** Moves the app's clock past every due time and runs the worker once. */
  async function runLater(ms = 3_600_000): Promise<number> {
    t.clock.advance(ms);
    return worker(t).runOnce();
  }

  it('pays the order from the PaymentIntent it read, and records the read on the event', async () => {
    await createOrder(t, 'c1', 4200, 'eur');
    stripe.addPayment('pi_c1', { amount: 4200, currency: 'eur', orderId: 'c1' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c1', amount: 4200 });
    await postStripe(t, event);
    const before = stripe.callsTo('/v1/payment_intents/pi_c1').length;

    expect(await worker(t).runOnce()).toBe(1);

    expect(stripe.callsTo('/v1/payment_intents/pi_c1').length - before).toBe(1);
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'done', attempts: 0 });
    expect(row.confirmation).toMatchObject({
      object: 'payment_intent',
      id: 'pi_c1',
      found: true,
      state: { status: 'succeeded', amount: 4200, currency: 'eur' },
    });
    expect(await orderRow(db, 'c1')).toMatchObject({ status: 'paid' });
    expect((await outboxRows(db, 'c1')).length).toBe(2);
  });

  it("quarantines when the provider's amount differs from the order, whatever the body says", async () => {
    await createOrder(t, 'c2', 1000, 'eur');
    stripe.addPayment('pi_c2', { amount: 900, currency: 'eur', orderId: 'c2' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c2', amount: 1000 });
    await postStripe(t, event);
    await worker(t).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'quarantined', status_reason: 'amount_mismatch', attempts: 0 });
    expect(await orderRow(db, 'c2')).toMatchObject({ status: 'awaiting_payment' });
    expect(await outboxRows(db, 'c2')).toEqual([]);
  });

  it('quarantines when the provider says the PaymentIntent does not exist (a forged or foreign event)', async () => {
    await createOrder(t, 'c3', 1000, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c3', amount: 1000 });
    await postStripe(t, event);
    await worker(t).runOnce();
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'quarantined', status_reason: 'provider_object_missing' });
    expect(row.confirmation).toMatchObject({ found: false, id: 'pi_c3' });
    expect(await orderRow(db, 'c3')).toMatchObject({ status: 'awaiting_payment' });
  });

  it('waits while the PaymentIntent is not succeeded yet (a counted attempt: the provider answered)', async () => {
    await createOrder(t, 'c4', 1000, 'eur');
    stripe.addPayment('pi_c4', { amount: 1000, currency: 'eur', orderId: 'c4', status: 'processing' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c4', amount: 1000 });
    await postStripe(t, event);
    await worker(t).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'TransientError: payment_not_confirmed',
    });
    expect(await orderRow(db, 'c4')).toMatchObject({ status: 'awaiting_payment' });

    stripe.paymentIntents.get('pi_c4')!.status = 'succeeded';
    await runLater();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done' });
    expect(await orderRow(db, 'c4')).toMatchObject({ status: 'paid' });
  });

  it('a stale success (the provider says canceled) never moves a paid order back', async () => {
    await createOrder(t, 'c5', 1000, 'eur');
    stripe.addPayment('pi_c5', { amount: 1000, currency: 'eur', orderId: 'c5' });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'c5', amount: 1000 }));
    await worker(t).runOnce();
    expect(await orderRow(db, 'c5')).toMatchObject({ status: 'paid' });

    stripe.paymentIntents.get('pi_c5')!.status = 'canceled';
    const again = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c5', amount: 1000 });
    await postStripe(t, again);
    await worker(t).runOnce();
    expect(await inboxRow(db, again.id as string)).toMatchObject({ status: 'done' });
    expect(await orderRow(db, 'c5')).toMatchObject({ status: 'paid' });
    expect((await outboxRows(db, 'c5')).length).toBe(2);
  });

  it('refunds from the Charge: a partial amount_refunded quarantines although the body says full', async () => {
    await createOrder(t, 'c6', 1000, 'eur');
    stripe.addPayment('pi_c6', { amount: 1000, currency: 'eur', orderId: 'c6', refunded: 400 });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'c6', amount: 1000 }));
    await worker(t).runOnce();
    const refund = chargeRefundedEvent({ orderId: 'c6', amount: 1000, refunded: 1000 });
    await postStripe(t, refund);
    await worker(t).runOnce();
    const row = await inboxRow(db, refund.id as string);
    expect(row).toMatchObject({ status: 'quarantined', status_reason: 'partial_refund' });
    expect(row.confirmation).toMatchObject({ object: 'charge', id: 'ch_c6', state: { amount_refunded: 400, refunded: false } });
    expect(await orderRow(db, 'c6')).toMatchObject({ status: 'paid' });

    stripe.charges.get('ch_c6')!.amount_refunded = 1000;
    const full = chargeRefundedEvent({ orderId: 'c6', amount: 1000 });
    await postStripe(t, full);
    await worker(t).runOnce();
    expect(await orderRow(db, 'c6')).toMatchObject({ status: 'refunded' });
  });

  it("the API down for longer than every attempt's backoff leaves the event pending, unattempted, and applies nothing", async () => {
    await createOrder(t, 'c7', 1000, 'eur');
    stripe.addPayment('pi_c7', { amount: 1000, currency: 'eur', orderId: 'c7' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c7', amount: 1000 });
    await postStripe(t, event);
    stripe.mode = 'down';
    // Ten rounds, each an hour later: far past WORKER_MAX_ATTEMPTS (3) with RETRY_MAX_MS (4 s).
    for (let round = 0; round < 10; round++) await runLater();
    const down = await inboxRow(db, event.id as string);
    expect(down).toMatchObject({ status: 'pending', attempts: 0, last_error: 'provider_unavailable (500)', confirmation: null });
    expect(await orderRow(db, 'c7')).toMatchObject({ status: 'awaiting_payment' });
    expect(await outboxRows(db, 'c7')).toEqual([]);

    stripe.mode = 'reset';
    await runLater();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'pending', attempts: 0, last_error: 'provider_unavailable' });

    stripe.mode = 'up';
    await runLater();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done', attempts: 0 });
    expect(await orderRow(db, 'c7')).toMatchObject({ status: 'paid' });
    expect((await outboxRows(db, 'c7')).length).toBe(2);
  });

  it("honours a 429's Retry-After: the event is due again no sooner", async () => {
    await createOrder(t, 'c8', 1000, 'eur');
    stripe.addPayment('pi_c8', { amount: 1000, currency: 'eur', orderId: 'c8' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c8', amount: 1000 });
    await postStripe(t, event);
    stripe.throttleNext(1, 120);
    const before = t.clock.now().getTime();
    await worker(t).runOnce();
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'pending', attempts: 0, last_error: 'provider_rate_limited (429)' });
    expect(row.next_attempt_at.getTime() - before).toBeGreaterThanOrEqual(120_000);
    expect(row.next_attempt_at.getTime() - before).toBeLessThan(125_000);
    t.clock.advance(60_000);
    expect(await worker(t).runOnce()).toBe(0);
    await runLater(61_000);
    expect(await orderRow(db, 'c8')).toMatchObject({ status: 'paid' });
  });

  it('a refused key: events wait, one clear line names the endpoint, the key is never logged', async () => {
    await createOrder(t, 'c9', 1000, 'eur');
    stripe.addPayment('pi_c9', { amount: 1000, currency: 'eur', orderId: 'c9' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'c9', amount: 1000 });
    await postStripe(t, event);
    stripe.keys.clear();
    const from = t.logs.lines.length;
    await worker(t).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'pending',
      attempts: 0,
      last_error: 'provider_credentials_refused (401)',
    });
    const lines = t.logs.lines.slice(from).filter((l) => l.includes('refused the endpoint'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('stripe-acme');
    expect(t.logs.text()).not.toContain(API_KEY);
    expect(t.logs.text()).not.toContain(API_KEY.slice(-4));
  });

  // The body cannot skip the provider's word, nor stall it (found by an adversarial review; both failed before).
  it('a charge.refunded without a charge id is not refunded on the body alone', async () => {
    await createOrder(t, 'fc1', 1000, 'eur');
    stripe.addPayment('pi_fc1', { amount: 1000, currency: 'eur', orderId: 'fc1' }); // paid, nothing refunded
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'fc1', amount: 1000 }));
    await worker(t).runOnce();
    expect(await orderRow(db, 'fc1')).toMatchObject({ status: 'paid' });

    const chargeReads = stripe.callsTo('/v1/charges/').length;
    const refund = chargeRefundedEvent({ orderId: 'fc1', amount: 1000 });
    delete (refund.data as { object: Record<string, unknown> }).object.id; // no charge id: nothing to read
    await postStripe(t, refund);
    await worker(t).runOnce();

    const row = await inboxRow(db, refund.id as string);
    // The read finds nothing to read (no call made), and the event is quarantined: no refund on the body alone.
    expect(stripe.callsTo('/v1/charges/').length).toBe(chargeReads);
    expect(row.confirmation).toMatchObject({ object: 'charge', found: false });
    expect(await orderRow(db, 'fc1')).toMatchObject({ status: 'paid' });
    expect((await outboxRows(db, 'fc1')).map((r) => r.operation_key)).not.toContain('erp:order-refunded:acme:fc1');
  });

  it("a provider's Retry-After is bounded: one 429 does not park the event for months", async () => {
    await createOrder(t, 'fc2', 1000, 'eur');
    stripe.addPayment('pi_fc2', { amount: 1000, currency: 'eur', orderId: 'fc2' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'fc2', amount: 1000 });
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

  it('a refund waiting for its payment is applied on what Stripe says when it applies: one reversed during the wait is not', async () => {
    t.clock.offsetMs = 0; // the wait counts from received_at, the database's time
    await createOrder(t, 'w1', 1000, 'eur');
    stripe.addPayment('pi_w1', { amount: 1000, currency: 'eur', orderId: 'w1', refunded: 1000 });
    const refund = chargeRefundedEvent({ orderId: 'w1', amount: 1000 });
    await postStripe(t, refund); // its payment_intent.succeeded is late (Stripe retries it)
    await runLater(60_000);
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'pending', status_reason: 'waiting', attempts: 0 });

    // Hours later the refund failed at Stripe; then the payment lands and the refund's next look runs.
    const charge = stripe.charges.get('ch_w1')!;
    charge.amount_refunded = 0;
    charge.refunded = false;
    t.clock.advance(10 * 3600_000);
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'w1', amount: 1000 }));
    await worker(t).runOnce();
    await runLater(15 * 60_000);
    expect((await orderRow(db, 'w1')).status).toBe('paid');
    expect((await outboxRows(db, 'w1')).filter((r: { operation_key: string }) => r.operation_key.includes('refund'))).toEqual([]);
  });

  it("a waiting refund's look deferred for its confirm read (provider down) keeps it marked 'waiting'", async () => {
    t.clock.offsetMs = 0;
    await createOrder(t, 'w2', 1000, 'eur');
    stripe.addPayment('pi_w2', { amount: 1000, currency: 'eur', orderId: 'w2', refunded: 1000 });
    const refund = chargeRefundedEvent({ orderId: 'w2', amount: 1000 });
    await postStripe(t, refund);
    t.clock.advance(3600_000);
    await worker(t).runOnce();
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'pending', status_reason: 'waiting' });
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

describe('confirm reads: one budget per key, shared through the database', () => {
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
          api: { env: 'K', baseUrl: stripe.url },
        },
      ],
      env: { K: API_KEY, PROVIDER_API_READS_PER_SECOND: '10', WORKER_MAX_ATTEMPTS: '2' },
    });
  });
  afterAll(async () => {
    await t.close();
    await stripe.stop();
    await db.drop();
  });

  it("reads what the budget grants, hands the rest back at the key's rate, never as an attempt", async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `b${i}`);
    for (const id of ids) {
      await createOrder(t, id, 1000, 'eur');
      stripe.addPayment(`pi_${id}`, { amount: 1000, currency: 'eur', orderId: id });
      await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: id, amount: 1000 }));
    }
    await worker(t).runOnce();
    // A burst of a fifth of the rate (2), the rest refilled at 8 per second: never more than 10 in a second.
    expect(stripe.callsTo('/v1/payment_intents/').length).toBe(2);
    const rows = await db.query(`SELECT status, attempts, last_error, next_attempt_at FROM webhook_inbox ORDER BY next_attempt_at`);
    expect(rows.filter((r: any) => r.status === 'done')).toHaveLength(2);
    const waiting = rows.filter((r: any) => r.status === 'pending');
    expect(waiting).toHaveLength(10);
    expect(waiting.every((r: any) => r.attempts === 0 && r.last_error === 'read_budget')).toBe(true);
    // Spread at 8 per second: the last is due more than a second after the first.
    const spread = waiting[9].next_attempt_at.getTime() - waiting[0].next_attempt_at.getTime();
    expect(spread).toBeGreaterThanOrEqual(1000);

    // Polled until drained: never a quarantine, every order paid once.
    const deadline = Date.now() + 20_000;
    while ((await db.query(`SELECT 1 FROM webhook_inbox WHERE status <> 'done'`)).length > 0) {
      if (Date.now() > deadline) throw new Error('did not drain');
      await worker(t).runOnce();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await db.query(`SELECT count(*)::int AS n FROM orders WHERE status = 'paid'`)).toEqual([{ n: 12 }]);
    expect(stripe.callsTo('/v1/payment_intents/').length).toBe(12);
  });
});
