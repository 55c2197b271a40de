import { Injectable, Module } from '@nestjs/common';
import { PermanentError, TransientError } from '../../src/common/errors';
import { HandlerOutcome, InboxEvent } from '../../src/inbox/inbox.types';
import { OnWebhookEvent } from '../../src/inbox/on-webhook-event.decorator';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
import { WorkerFaults } from '../../src/inbox/worker-faults';
import { OrdersService } from '../../src/orders/orders.service';
import {
  chargeRefundedEvent,
  createOrder,
  ENDPOINTS,
  inboxRow,
  orderRow,
  outboxRows,
  paymentIntentEvent,
  postStripe,
  TENANT,
  worker,
} from './worker-fixtures';
import { UnitOfWork } from '../../src/database/unit-of-work';

/** Writes a row, then fails as the event's order id says: the write must vanish with the failure. */
@Injectable()
class FlakyHandlers {
  @OnWebhookEvent('stripe', 'test.batch')
  async handle(event: InboxEvent, tx: UnitOfWork): Promise<HandlerOutcome> {
    await tx.query('INSERT INTO batch_effects (event_id) VALUES ($1)', [event.eventId]);
    const mode = event.payload.data.object.metadata.order_id as string;
    if (mode === 'transient') throw new TransientError('try again later');
    if (mode === 'permanent') throw new PermanentError('cannot_ever_work');
    if (mode === 'sql') await tx.query('SELECT 1/0');
    return { kind: 'done' };
  }
}

@Module({ providers: [FlakyHandlers] })
class FlakyHandlersModule {}

describe('worker batches: many events per transaction, one savepoint each', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query('CREATE TABLE batch_effects (event_id text NOT NULL)');
    // One lane, so all ten events share one transaction.
    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { DATABASE_POOL_SIZE: '3' }, imports: [FlakyHandlersModule] });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  /** Parks what earlier tests left to retry, so a claim holds exactly the test's own events. */
  const parkLeftovers = () => db.query(`UPDATE webhook_inbox SET next_attempt_at = now() + interval '1 hour' WHERE status = 'pending'`);

  /** One runOnce() with `hook` run before each completion, removed afterwards. */
  async function runOnceWith(hook: WorkerFaults['beforeComplete']): Promise<number> {
    const faults = t.app.get(WorkerFaults);
    faults.beforeComplete = hook;
    try {
      return await worker(t).runOnce();
    } finally {
      faults.beforeComplete = async () => undefined;
    }
  }

  it('commits the events that succeeded and isolates each failure with its own writes rolled back', async () => {
    const modes = ['ok', 'transient', 'ok', 'sql', 'ok', 'permanent', 'ok', 'ok', 'ok', 'ok'];
    const ids = modes.map((_, i) => `evt_batch_${i}`);
    for (const [i, mode] of modes.entries()) {
      await postStripe(t, paymentIntentEvent('test.batch', { orderId: mode, id: ids[i] }));
    }
    expect(await worker(t).runOnce()).toBe(10);

    const rows = [];
    for (const id of ids) rows.push(await inboxRow(db, id));
    expect(rows.map((r) => r.status)).toEqual(modes.map((m) => (m === 'ok' ? 'done' : m === 'permanent' ? 'quarantined' : 'pending')));
    expect(rows[1]).toMatchObject({ attempts: 1, last_error: 'TransientError: try again later', locked_by: null });
    expect(rows[3].last_error).toMatch(/division by zero/);
    expect(rows[5].status_reason).toBe('cannot_ever_work');
    const effects = await db.query('SELECT event_id FROM batch_effects ORDER BY event_id');
    expect(effects.map((e) => e.event_id)).toEqual(ids.filter((_, i) => modes[i] === 'ok').sort());
  });

  it('applies a batch of payment events in a few statements with the result of applying them one by one', async () => {
    await parkLeftovers();
    await createOrder(t, 'b1');
    await createOrder(t, 'b2');
    await createOrder(t, 'b3');
    await createOrder(t, 'b4', 1000, 'usd');
    const events = [
      paymentIntentEvent('payment_intent.payment_failed', { orderId: 'b1', id: 'evt_b1_failed' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'b1', id: 'evt_b1_paid' }),
      chargeRefundedEvent({ orderId: 'b1', id: 'evt_b1_refunded' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'b1', id: 'evt_b1_late' }),
      chargeRefundedEvent({ orderId: 'b2', id: 'evt_b2_early' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'b2', id: 'evt_b2_paid' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'b3', id: 'evt_b3_a' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'b3', id: 'evt_b3_b' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'b4', id: 'evt_b4_eur' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'missing', id: 'evt_missing' }),
    ];
    for (const event of events) await postStripe(t, event);
    expect(await worker(t).runOnce()).toBe(10);

    const statuses = [];
    for (const e of events) statuses.push((await inboxRow(db, e.id as string)).status);
    expect(statuses).toEqual(['done', 'done', 'done', 'done', 'pending', 'done', 'done', 'done', 'quarantined', 'pending']);
    expect(await orderRow(db, 'b1')).toMatchObject({
      status: 'refunded',
      provider_payment_id: 'pi_b1',
      last_payment_error: 'card_declined:insufficient_funds',
    });
    expect((await orderRow(db, 'b2')).status).toBe('paid');
    expect((await orderRow(db, 'b3')).status).toBe('paid');
    expect((await orderRow(db, 'b4')).status).toBe('awaiting_payment');
    expect((await inboxRow(db, 'evt_b4_eur')).status_reason).toBe('currency_mismatch');
    expect((await inboxRow(db, 'evt_b2_early')).last_error).toBe('WaitingError: order_not_paid_yet');
    expect((await outboxRows(db, 'b1')).map((r) => r.operation_key)).toEqual([
      'email:receipt:acme:b1',
      'email:refund:acme:b1',
      'erp:order-paid:acme:b1',
      'erp:order-refunded:acme:b1',
    ]);
    expect(await outboxRows(db, 'b3')).toHaveLength(2);
  });

  it('a payment id already bound to another order is quarantined at once, and the rest of the batch applies', async () => {
    await parkLeftovers();
    await t.app.get(OrdersService).create({
      tenantId: TENANT,
      id: 'pb1',
      totalMinor: 1000,
      currency: 'eur',
      customerEmail: 'pb1@example.com',
      providerPaymentId: 'pi_shared',
    });
    for (const id of ['pb2', 'pb3', 'pb4', 'pb5']) await createOrder(t, id);
    const events = [
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'pb2', paymentId: 'pi_shared', id: 'evt_pb2' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'pb3', id: 'evt_pb3' }),
      // Two orders claiming one new payment in the same batch: the first binds it.
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'pb4', paymentId: 'pi_new', id: 'evt_pb4' }),
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'pb5', paymentId: 'pi_new', id: 'evt_pb5' }),
    ];
    for (const event of events) await postStripe(t, event);
    expect(await worker(t).runOnce()).toBe(4);

    const rows = [];
    for (const e of events) rows.push(await inboxRow(db, e.id as string));
    expect(rows.map((r) => [r.status, r.status_reason, r.attempts])).toEqual([
      ['quarantined', 'payment_already_bound', 0],
      ['done', null, 0],
      ['done', null, 0],
      ['quarantined', 'payment_already_bound', 0],
    ]);
    expect(await orderRow(db, 'pb2')).toMatchObject({ status: 'awaiting_payment', provider_payment_id: null });
    expect(await orderRow(db, 'pb4')).toMatchObject({ status: 'paid', provider_payment_id: 'pi_new' });
    expect(await outboxRows(db, 'pb2')).toHaveLength(0);
    expect(await outboxRows(db, 'pb5')).toHaveLength(0);
  });

  it('falls back to one event at a time when a batch call fails as a whole', async () => {
    await parkLeftovers();
    for (const id of ['f1', 'f2', 'f3']) await createOrder(t, id);
    for (const id of ['f1', 'f2', 'f3'])
      await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: id, id: `evt_${id}` }));
    const claimed = await runOnceWith(async (event) => {
      if (event.eventId === 'evt_f2') throw new Error('injected');
    });
    expect(claimed).toBe(3);
    expect((await orderRow(db, 'f1')).status).toBe('paid');
    expect((await orderRow(db, 'f2')).status).toBe('awaiting_payment');
    expect((await orderRow(db, 'f3')).status).toBe('paid');
    expect(await inboxRow(db, 'evt_f2')).toMatchObject({ status: 'pending', attempts: 1, last_error: 'Error: injected' });
    expect(await outboxRows(db, 'f2')).toHaveLength(0);
  });

  it('in a mixed batch, a failed batch call rolls back to its savepoint and the other handlers still commit', async () => {
    await parkLeftovers();
    for (const id of ['m1', 'm2']) await createOrder(t, id);
    await postStripe(t, paymentIntentEvent('test.batch', { orderId: 'ok', id: 'evt_mixed_single' }));
    for (const id of ['m1', 'm2']) await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: id, id: `evt_${id}` }));
    const claimed = await runOnceWith(async (event) => {
      if (event.eventId === 'evt_m2') throw new Error('injected');
    });
    expect(claimed).toBe(3);
    expect((await inboxRow(db, 'evt_mixed_single')).status).toBe('done');
    expect(await db.query(`SELECT count(*)::int AS n FROM batch_effects WHERE event_id = 'evt_mixed_single'`)).toEqual([{ n: 1 }]);
    expect((await orderRow(db, 'm1')).status).toBe('paid');
    expect(await inboxRow(db, 'evt_m2')).toMatchObject({ status: 'pending', attempts: 1, last_error: 'Error: injected' });
    expect(await outboxRows(db, 'm2')).toHaveLength(0);
  });

  it("an operator's quarantine while a batch holds the event fences the batch's completion out", async () => {
    await parkLeftovers();
    for (const id of ['q1', 'q2', 'q3']) await createOrder(t, id);
    for (const id of ['q1', 'q2', 'q3'])
      await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: id, id: `evt_${id}` }));
    const held = await inboxRow(db, 'evt_q2');
    let quarantined = false;
    await runOnceWith(async (event) => {
      if (event.eventId !== 'evt_q2' || quarantined) return;
      quarantined = true;
      const res = await request(t.url).post(`/admin/inbox/${held.id}/quarantine`).set(op).send({ reason: 'poison message' });
      expect(res.status).toBe(200);
    });
    expect(await inboxRow(db, 'evt_q2')).toMatchObject({ status: 'quarantined', status_reason: 'operator', locked_by: null });
    expect((await orderRow(db, 'q2')).status).toBe('awaiting_payment');
    expect(await outboxRows(db, 'q2')).toHaveLength(0);
    for (const id of ['q1', 'q3']) {
      expect((await inboxRow(db, `evt_${id}`)).status).toBe('done');
      expect((await orderRow(db, id)).status).toBe('paid');
    }
  });
});
