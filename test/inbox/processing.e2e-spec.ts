import { Injectable, Module } from '@nestjs/common';
import request from 'supertest';
import { PermanentError } from '../../src/common/errors';
import { HandlerOutcome } from '../../src/inbox/inbox.types';
import { OnWebhookEvent } from '../../src/inbox/on-webhook-event.decorator';
import { WorkerFaults } from '../../src/inbox/worker-faults';
import { OrdersService } from '../../src/orders/orders.service';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';
import {
  chargeRefundedEvent,
  createOrder,
  drain,
  ENDPOINTS,
  inboxRow,
  orderRow,
  outboxRows,
  paymentIntentEvent,
  postStripe,
  TENANT,
  worker,
} from './worker-fixtures';

@Injectable()
class TestHandlers {
  @OnWebhookEvent('stripe', 'test.permanent')
  async permanent(): Promise<HandlerOutcome> {
    throw new PermanentError('bad_mapping');
  }
}

@Module({ providers: [TestHandlers] })
class TestHandlersModule {}

const viewer = { Authorization: `Bearer ${VIEWER_TOKEN}` };

describe('worker: processing [scenarios 13, 15-18]', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: ENDPOINTS,
      env: { WORKER_MAX_ATTEMPTS: '3', RETRY_BASE_MS: '1000', RETRY_MAX_MS: '60000' },
      imports: [TestHandlersModule],
    },
    (started) => ({ db, t } = started),
  );
  afterEach(() => {
    t.app.get(WorkerFaults).beforeComplete = async () => undefined;
  });

  it('13: a payment success pays the order and writes one ERP and one email entry, event done', async () => {
    await createOrder(t, 'o13', 4200, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o13', amount: 4200 });
    await postStripe(t, event);

    expect(await worker(t).runOnce()).toBe(1);

    const inbox = await inboxRow(db, event.id as string);
    expect(inbox).toMatchObject({ status: 'done', locked_by: null, locked_until: null, attempts: 0 });
    expect(inbox.completed_at).toBeInstanceOf(Date);
    expect(await orderRow(db, 'o13')).toMatchObject({ status: 'paid', provider_payment_id: 'pi_o13' });
    const outbox = await outboxRows(db, 'o13');
    expect(outbox.map((r) => [r.operation_key, r.destination, r.operation_type, r.status, r.source_event_id])).toEqual([
      ['email:receipt:acme:o13', 'email', 'email.receipt', 'pending', inbox.id],
      ['erp:order-paid:acme:o13', 'erp', 'order.paid', 'pending', inbox.id],
    ]);
    expect(outbox[1].payload).toEqual({
      operationKey: 'erp:order-paid:acme:o13',
      type: 'order.paid',
      tenantId: TENANT,
      orderId: 'o13',
      amountMinor: 4200,
      currency: 'eur',
      paymentId: 'pi_o13',
      occurredAt: new Date(1_790_000_000 * 1000).toISOString(),
    });
    expect(outbox[0].payload).toEqual({
      to: 'o13@example.com',
      template: 'receipt',
      data: { orderId: 'o13', amountMinor: 4200, currency: 'eur' },
    });
  });

  it('13: a failure between the business update and the commit leaves nothing visible; the retry applies it once', async () => {
    await createOrder(t, 'o13b');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o13b' });
    await postStripe(t, event);
    t.app.get(WorkerFaults).beforeComplete = async () => {
      throw new Error('injected fault');
    };

    await worker(t).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'Error: injected fault',
      locked_by: null,
    });
    expect((await orderRow(db, 'o13b')).status).toBe('awaiting_payment');
    expect(await outboxRows(db, 'o13b')).toHaveLength(0);

    t.app.get(WorkerFaults).beforeComplete = async () => undefined;
    t.clock.advance(2_000);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
    expect((await orderRow(db, 'o13b')).status).toBe('paid');
    expect(await outboxRows(db, 'o13b')).toHaveLength(2);
  });

  it.each([
    ['amount_mismatch', { amount: 999 }, {}],
    ['currency_mismatch', { currency: 'usd' }, {}],
    ['payment_mismatch', { paymentId: 'pi_someone_else' }, { bound: 'pi_bound' }],
  ])('15: %s quarantines the event and leaves the order unchanged', async (reason, eventOverrides, orderOpts) => {
    const orderId = `o15-${reason}`;
    await t.app.get(OrdersService).create({
      tenantId: TENANT,
      id: orderId,
      totalMinor: 1000,
      currency: 'eur',
      customerEmail: 'x@example.com',
      providerPaymentId: (orderOpts as { bound?: string }).bound,
    });
    const before = await orderRow(db, orderId);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId, ...eventOverrides });
    await postStripe(t, event);

    await worker(t).runOnce();

    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'quarantined', status_reason: reason, locked_by: null });
    expect(await orderRow(db, orderId)).toEqual(before);
    expect(await outboxRows(db, orderId)).toHaveLength(0);
  });

  it('16: a refund before its payment waits, applies after it, and the late success never moves the order back', async () => {
    await createOrder(t, 'o16');
    const refund = chargeRefundedEvent({ orderId: 'o16' });
    await postStripe(t, refund);

    await worker(t).runOnce();
    const waiting = await inboxRow(db, refund.id as string);
    // Early, not failed: handed back without counting an attempt.
    expect(waiting).toMatchObject({ status: 'pending', attempts: 0, last_error: 'WaitingError: order_not_paid_yet' });
    expect((await orderRow(db, 'o16')).status).toBe('awaiting_payment');

    const success = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o16' });
    await postStripe(t, success);
    t.clock.advance(5_000); // both due now
    await drain(t);
    expect((await inboxRow(db, success.id as string)).status).toBe('done');
    // The refund may have lost the order lock race once more: give it its next slot.
    t.clock.advance(60_000);
    await drain(t);
    expect((await inboxRow(db, refund.id as string)).status).toBe('done');
    expect((await orderRow(db, 'o16')).status).toBe('refunded');

    // A second success event for the same payment arrives late.
    const late = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o16' });
    await postStripe(t, late);
    await drain(t);
    expect((await inboxRow(db, late.id as string)).status).toBe('done');
    expect((await orderRow(db, 'o16')).status).toBe('refunded');
    expect((await outboxRows(db, 'o16')).map((r) => r.operation_key)).toEqual([
      'email:receipt:acme:o16',
      'email:refund:acme:o16',
      'erp:order-paid:acme:o16',
      'erp:order-refunded:acme:o16',
    ]);
  });

  it('16: a refund waits for a payment delivered hours later, past the attempt limit, and applies then', async () => {
    await createOrder(t, 'o16w');
    const refund = chargeRefundedEvent({ orderId: 'o16w' });
    await postStripe(t, refund);
    // Twice the attempt limit of looks, an hour apart (RETRY_MAX_MS caps each wait at a minute here).
    for (let look = 0; look < 6; look++) {
      await drain(t);
      expect(await inboxRow(db, refund.id as string)).toMatchObject({
        status: 'pending',
        attempts: 0,
        last_error: 'WaitingError: order_not_paid_yet',
      });
      t.clock.advance(3600_000);
    }
    const history = await db.query(
      `SELECT a.* FROM webhook_inbox_attempts a JOIN webhook_inbox i ON i.id = a.inbox_id WHERE i.event_id = $1`,
      [refund.id],
    );
    expect(history).toEqual([]);

    // Stripe's retry of the payment's failed delivery, 6 hours later.
    const success = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o16w' });
    await postStripe(t, success);
    await drain(t);
    t.clock.advance(60_000);
    await drain(t);
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'done', attempts: 0 });
    expect((await orderRow(db, 'o16w')).status).toBe('refunded');
    expect((await outboxRows(db, 'o16w')).map((r) => r.operation_key)).toEqual([
      'email:receipt:acme:o16w',
      'email:refund:acme:o16w',
      'erp:order-paid:acme:o16w',
      'erp:order-refunded:acme:o16w',
    ]);
  });

  it('16: a refund whose payment never comes is quarantined after WORKER_WAIT_HOURS and the attempt limit', async () => {
    await createOrder(t, 'o16q');
    const refund = chargeRefundedEvent({ orderId: 'o16q' });
    await postStripe(t, refund);
    await drain(t);
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'pending', attempts: 0 });

    t.clock.advance(72 * 3600_000 + 1000); // the default wait is over: attempts count from here
    for (let attempt = 1; attempt <= 3; attempt++) {
      await drain(t);
      t.clock.advance(61_000);
    }
    expect(await inboxRow(db, refund.id as string)).toMatchObject({
      status: 'quarantined',
      status_reason: 'max_attempts',
      attempts: 3,
      last_error: 'WaitingError: order_not_paid_yet',
    });
    expect((await orderRow(db, 'o16q')).status).toBe('awaiting_payment');
  });

  it('16: a waiting refund is left out of the oldest pending age (it paged WebhookInboxOldestPendingOld for days) and counted apart', async () => {
    t.clock.offsetMs = 0; // the earlier tests' days are over: received_at is the database's time
    await createOrder(t, 'o16m');
    const refund = chargeRefundedEvent({ orderId: 'o16m' });
    await postStripe(t, refund);
    await drain(t);
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'pending', status_reason: 'waiting' });
    // It has waited an hour for its payment.
    await db.query(`UPDATE webhook_inbox SET received_at = received_at - interval '1 hour' WHERE event_id = $1`, [refund.id]);

    const scrape = async () => (await request(t.url).get('/metrics')).text;
    const stats = async () => (await request(t.url).get('/admin/stats').set(viewer)).body.inbox;
    const text = await scrape();
    expect(text).toMatch(/^webhook_inbox_oldest_pending_age_seconds 0$/m);
    expect(text).toMatch(/^webhook_inbox_waiting 1$/m);
    expect(text).toMatch(/^webhook_inbox_backlog\{status="pending"\} 1$/m);
    expect(await stats()).toMatchObject({ oldestPendingAgeSeconds: 0, waiting: 1, byStatus: { pending: 1 } });

    // An event due for work ages as before, whatever waits beside it.
    const success = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o16m' });
    await postStripe(t, success);
    t.clock.advance(400_000);
    const age = Number(/^webhook_inbox_oldest_pending_age_seconds (\S+)$/m.exec(await scrape())?.[1]);
    expect(age).toBeGreaterThanOrEqual(400);
    expect(age).toBeLessThan(3600);
    expect(await stats()).toMatchObject({ waiting: 1, byStatus: { pending: 2 } });
    expect((await stats()).oldestPendingAgeSeconds).toBeLessThan(3600);

    // Applied once its payment is: done, the mark gone.
    await drain(t);
    t.clock.advance(15 * 60_000);
    await drain(t);
    expect(await inboxRow(db, refund.id as string)).toMatchObject({ status: 'done', status_reason: null });
    expect(await scrape()).toMatch(/^webhook_inbox_waiting 0$/m);
  });

  it('17: two different events for the same payment cause one ERP operation', async () => {
    await createOrder(t, 'o17');
    const first = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o17' });
    const second = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o17' });
    await postStripe(t, first);
    await postStripe(t, second);

    await drain(t); // one batch: both run concurrently and meet at the order lock

    expect((await inboxRow(db, first.id as string)).status).toBe('done');
    expect((await inboxRow(db, second.id as string)).status).toBe('done');
    const rows = await outboxRows(db, 'o17');
    expect(rows.filter((r) => r.destination === 'erp')).toHaveLength(1);
    expect(rows).toHaveLength(2);
  });

  it('18: a transient error backs off with growing attempts and is quarantined at the limit', async () => {
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o18-never-created' });
    await postStripe(t, event);

    const ceilings = [1000, 2000];
    for (const [i, ceiling] of ceilings.entries()) {
      const before = t.clock.now().getTime();
      await drain(t);
      const row = await inboxRow(db, event.id as string);
      expect(row).toMatchObject({ status: 'pending', attempts: i + 1, last_error: 'TransientError: order_not_found', locked_by: null });
      const delay = row.next_attempt_at.getTime() - before;
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(ceiling + 1_000); // + the time the round itself took
      t.clock.advance(ceiling + 1);
    }
    await drain(t);
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'quarantined', status_reason: 'max_attempts', attempts: 3 });
    expect(row.last_error).toContain('order_not_found');
    expect(row.completed_at).toBeInstanceOf(Date);
  });

  it('a payment failure is recorded and the order keeps awaiting payment', async () => {
    await createOrder(t, 'o-failed');
    const event = paymentIntentEvent('payment_intent.payment_failed', { orderId: 'o-failed' });
    await postStripe(t, event);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
    expect(await orderRow(db, 'o-failed')).toMatchObject({
      status: 'awaiting_payment',
      last_payment_error: 'card_declined:insufficient_funds',
    });
    expect(await outboxRows(db, 'o-failed')).toHaveLength(0);
  });

  it('a cancellation cancels an awaiting order without outbox entries', async () => {
    await createOrder(t, 'o-cancel');
    const event = paymentIntentEvent('payment_intent.canceled', { orderId: 'o-cancel' });
    await postStripe(t, event);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
    expect((await orderRow(db, 'o-cancel')).status).toBe('canceled');
    expect(await outboxRows(db, 'o-cancel')).toHaveLength(0);
  });

  it('a type without a handler is ignored; a PermanentError quarantines with its reason', async () => {
    const unhandled = { ...paymentIntentEvent('customer.created', { orderId: 'x' }) };
    const permanent = { ...paymentIntentEvent('test.permanent', { orderId: 'x' }) };
    await postStripe(t, unhandled);
    await postStripe(t, permanent);
    await drain(t);
    expect(await inboxRow(db, unhandled.id as string)).toMatchObject({ status: 'ignored', status_reason: 'no_handler' });
    expect(await inboxRow(db, permanent.id as string)).toMatchObject({ status: 'quarantined', status_reason: 'bad_mapping', attempts: 0 });
  });
});
