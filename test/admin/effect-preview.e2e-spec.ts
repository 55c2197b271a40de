import { Client } from 'pg';
import request from 'supertest';
import { FakeStripeApi } from '../support/fake-stripe-api';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';
import {
  chargeRefundedEvent,
  createOrder,
  drain,
  ENDPOINTS,
  inboxRow,
  orderRow,
  paymentIntentEvent,
  postStripe,
  STRIPE_SECRET,
} from '../inbox/worker-fixtures';

const GLOBEX_TOKEN = 'globex-operator-token-0123456789';
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const viewer = { Authorization: `Bearer ${VIEWER_TOKEN}` };
const globex = { Authorization: `Bearer ${GLOBEX_TOKEN}` };

/** The effect preview (issue 37): what a replay would do, computed by the handler in a transaction always rolled back. */
describe('effect preview: POST /admin/inbox/:id/preview and the bulk replay dry run', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [
        ...ENDPOINTS,
        { id: 'stripe-globex', provider: 'stripe', tenantId: 'globex', secrets: [{ label: 'k', value: STRIPE_SECRET }] },
      ],
      env: { ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN},g:operator@globex:${GLOBEX_TOKEN}` },
    },
    (started) => ({ db, t } = started),
  );

  /** Accepts `event` and quarantines it at once (before any worker), as an operator would stop it. */
  async function quarantined(event: Record<string, unknown>): Promise<string> {
    await postStripe(t, event);
    const { id } = await inboxRow(db, event.id as string);
    const res = await request(t.url).post(`/admin/inbox/${id}/quarantine`).set(op).send({ reason: 'hold for the test' });
    expect(res.status).toBe(200);
    return String(id);
  }

  async function preview(id: string): Promise<request.Response> {
    return request(t.url).post(`/admin/inbox/${id}/preview`).set(op).send({});
  }

  /** What the database holds of an event's effects: its transitions and the outbox entries it wrote. */
  async function effectsOf(id: string): Promise<{ transitions: unknown[]; operations: unknown[] }> {
    const transitions = await db.query(
      `SELECT tenant_id AS "tenantId", order_id AS "orderId", from_status AS "from", to_status AS "to"
         FROM order_transitions WHERE inbox_id = $1 ORDER BY at`,
      [id],
    );
    const operations = await db.query(
      `SELECT operation_key AS "operationKey", destination, operation_type AS "operationType", aggregate
         FROM outbox WHERE source_event_id = $1 ORDER BY id`,
      [id],
    );
    return { transitions, operations };
  }

  /** Previews, checks the preview changed nothing, replays, runs the worker, and returns both for comparison. */
  async function previewThenReplay(id: string) {
    const before = { effects: await effectsOf(id), inbox: await db.query('SELECT * FROM webhook_inbox WHERE id = $1', [id]) };
    const ordersBefore = await db.query('SELECT * FROM orders ORDER BY tenant_id, id');
    const res = await preview(id);
    expect(res.status).toBe(200);
    // Nothing of it stayed: the rows, the orders, and no transaction left open.
    expect(await effectsOf(id)).toEqual(before.effects);
    expect(await db.query('SELECT * FROM webhook_inbox WHERE id = $1', [id])).toEqual(before.inbox);
    expect(await db.query('SELECT * FROM orders ORDER BY tenant_id, id')).toEqual(ordersBefore);
    const open = await db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
    );
    expect(open[0].n).toBe(0);

    const replay = await request(t.url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'after the preview' });
    expect(replay.status).toBe(200);
    await drain(t);
    const after = await effectsOf(id);
    const done = await db.query('SELECT status, status_reason FROM webhook_inbox WHERE id = $1', [id]);
    return {
      preview: res.body,
      replayed: {
        transitions: after.transitions.slice(before.effects.transitions.length),
        operations: after.operations.slice(before.effects.operations.length),
        status: done[0].status,
        reason: done[0].status_reason,
      },
    };
  }

  function expectSame(preview: any, replayed: any): void {
    expect(preview.transitions).toEqual(replayed.transitions);
    expect(preview.operations).toEqual(replayed.operations);
    expect({ status: preview.outcome.status, reason: preview.outcome.reason }).toEqual({
      status: replayed.status,
      reason: replayed.reason,
    });
  }

  it('payment_intent.succeeded: awaiting_payment -> paid, an ERP and an e-mail operation; the replay does exactly that', async () => {
    await createOrder(t, 'pv-paid', 1000);
    const id = await quarantined(paymentIntentEvent('payment_intent.succeeded', { orderId: 'pv-paid' }));
    const { preview, replayed } = await previewThenReplay(id);
    expect(preview).toMatchObject({
      id,
      eventType: 'payment_intent.succeeded',
      status: 'quarantined',
      replayRefusal: null,
      confirmRead: 'not_needed',
      outcome: { status: 'done', reason: null },
      transitions: [{ tenantId: 'acme', orderId: 'pv-paid', from: 'awaiting_payment', to: 'paid' }],
      operations: [
        { operationKey: 'erp:order-paid:acme:pv-paid', destination: 'erp', operationType: 'order.paid', aggregate: 'order:pv-paid' },
        { operationKey: 'email:receipt:acme:pv-paid', destination: 'email', operationType: 'email.receipt', aggregate: 'order:pv-paid' },
      ],
    });
    expect(preview.writes).toMatchObject({ orders: { updated: 1 }, order_transitions: { inserted: 1 }, outbox: { inserted: 2 } });
    expectSame(preview, replayed);
    expect((await orderRow(db, 'pv-paid')).status).toBe('paid');
  });

  it('payment_intent.payment_failed: no transition, the failure recorded on the order (an orders update); the replay does that', async () => {
    await createOrder(t, 'pv-failed', 1000);
    const id = await quarantined(paymentIntentEvent('payment_intent.payment_failed', { orderId: 'pv-failed' }));
    const { preview, replayed } = await previewThenReplay(id);
    expect(preview).toMatchObject({ outcome: { status: 'done', reason: null }, transitions: [], operations: [] });
    expect(preview.writes).toEqual({ orders: { inserted: 0, updated: 1, deleted: 0 } });
    expectSame(preview, replayed);
    expect((await orderRow(db, 'pv-failed')).last_payment_error).toBe('card_declined:insufficient_funds');
  });

  it('payment_intent.canceled: awaiting_payment -> canceled, no operation; the replay does that', async () => {
    await createOrder(t, 'pv-canceled', 1000);
    const id = await quarantined(paymentIntentEvent('payment_intent.canceled', { orderId: 'pv-canceled' }));
    const { preview, replayed } = await previewThenReplay(id);
    expect(preview).toMatchObject({
      outcome: { status: 'done' },
      transitions: [{ tenantId: 'acme', orderId: 'pv-canceled', from: 'awaiting_payment', to: 'canceled' }],
      operations: [],
    });
    expectSame(preview, replayed);
  });

  it('charge.refunded: paid -> refunded, an ERP and an e-mail operation; the replay does that', async () => {
    await createOrder(t, 'pv-refund', 1000);
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'pv-refund' }));
    await drain(t);
    const id = await quarantined(chargeRefundedEvent({ orderId: 'pv-refund' }));
    const { preview, replayed } = await previewThenReplay(id);
    expect(preview).toMatchObject({
      outcome: { status: 'done' },
      transitions: [{ tenantId: 'acme', orderId: 'pv-refund', from: 'paid', to: 'refunded' }],
      operations: [
        { operationKey: 'erp:order-refunded:acme:pv-refund', destination: 'erp', operationType: 'order.refunded' },
        { operationKey: 'email:refund:acme:pv-refund', destination: 'email', operationType: 'email.refund' },
      ],
    });
    expectSame(preview, replayed);
  });

  it('a done event replayed changes nothing (already applied): the preview says so, and the replay writes nothing', async () => {
    await createOrder(t, 'pv-again', 1000);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pv-again' });
    await postStripe(t, event);
    await drain(t);
    const { id, status } = await inboxRow(db, event.id as string);
    expect(status).toBe('done');
    const { preview, replayed } = await previewThenReplay(String(id));
    expect(preview).toMatchObject({ status: 'done', outcome: { status: 'done' }, transitions: [], operations: [], writes: {} });
    expectSame(preview, replayed);
  });

  it('a refund ahead of its payment: the preview says retry (order_not_paid_yet) and writes nothing; the worker retries', async () => {
    await createOrder(t, 'pv-early', 1000);
    const id = await quarantined(chargeRefundedEvent({ orderId: 'pv-early' }));
    const res = await preview(id);
    expect(res.body).toMatchObject({
      outcome: { status: 'retry', reason: 'WaitingError: order_not_paid_yet' },
      transitions: [],
      operations: [],
      writes: {},
    });
  });

  it('a lock held elsewhere: 503 preview_busy within the lock timeout, and no lock kept', async () => {
    await createOrder(t, 'pv-locked', 1000);
    const id = await quarantined(paymentIntentEvent('payment_intent.succeeded', { orderId: 'pv-locked' }));
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM orders WHERE tenant_id = 'acme' AND id = 'pv-locked' FOR UPDATE`);
      const started = Date.now();
      const res = await preview(id);
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'preview_busy' });
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect((await preview(id)).body.outcome.status).toBe('done');
  });

  it('bad input: 400 invalid_id, 400 invalid_body, 404 for an unknown id and for another tenant, 403 for a viewer', async () => {
    await createOrder(t, 'pv-input', 1000);
    const id = await quarantined(paymentIntentEvent('payment_intent.succeeded', { orderId: 'pv-input' }));
    const answer = async (r: request.Test) => {
      const res = await r;
      return { status: res.status, reason: res.body.reason };
    };
    expect(await answer(request(t.url).post('/admin/inbox/abc/preview').set(op).send({}))).toEqual({ status: 400, reason: 'invalid_id' });
    expect(await answer(request(t.url).post(`/admin/inbox/${id}/preview`).set(op).send({ dryRun: true }))).toEqual({
      status: 400,
      reason: 'invalid_body',
    });
    expect(await answer(request(t.url).post('/admin/inbox/999999999/preview').set(op).send({}))).toEqual({
      status: 404,
      reason: 'inbox_event_not_found',
    });
    expect(await answer(request(t.url).post(`/admin/inbox/${id}/preview`).set(globex).send({}))).toEqual({
      status: 404,
      reason: 'inbox_event_not_found',
    });
    expect(await answer(request(t.url).post(`/admin/inbox/${id}/preview`).set(viewer).send({}))).toEqual({
      status: 403,
      reason: 'insufficient_role',
    });
    // No body at all is fine.
    expect((await request(t.url).post(`/admin/inbox/${id}/preview`).set(op)).status).toBe(200);
  });

  it("the bulk replay's dry run previews each event it would replay, changing nothing", async () => {
    await createOrder(t, 'pv-bulk', 1000);
    const id = await quarantined(paymentIntentEvent('payment_intent.succeeded', { orderId: 'pv-bulk' }));
    const res = await request(t.url)
      .post('/admin/inbox/replay')
      .set(op)
      .send({ filter: { status: 'quarantined', endpoint: 'stripe-acme' }, dryRun: true, reason: 'look first' });
    expect(res.status).toBe(200);
    const mine = res.body.previews.find((p: { id: string }) => p.id === id);
    expect(mine).toMatchObject({
      outcome: { status: 'done' },
      transitions: [{ orderId: 'pv-bulk', from: 'awaiting_payment', to: 'paid' }],
      operations: [{ operationKey: 'erp:order-paid:acme:pv-bulk' }, { operationKey: 'email:receipt:acme:pv-bulk' }],
    });
    expect(res.body.previews.length).toBe(res.body.count);
    expect((await inboxRow(db, (await db.query('SELECT event_id FROM webhook_inbox WHERE id = $1', [id]))[0].event_id)).status).toBe(
      'quarantined',
    );
    expect((await orderRow(db, 'pv-bulk')).status).toBe('awaiting_payment');
  });
});

/** An endpoint that confirms transitions by a read of Stripe's API: the preview never makes that read. */
describe('effect preview of an endpoint with confirm reads', () => {
  const API_KEY = 'sk_test_preview_0123456789SECRETKEY';
  let db: TestDatabase;
  let t: TestApp;
  let stripe: FakeStripeApi;
  // Before the app's own beforeAll: its endpoint names the fake's address.
  beforeAll(async () => {
    stripe = await new FakeStripeApi(API_KEY).start();
  }, 30_000);
  useTestApp(
    () => ({
      endpoints: [
        {
          id: 'stripe-acme',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: 'current', value: STRIPE_SECRET }],
          api: { env: 'STRIPE_API_KEY_ACME', baseUrl: stripe.url },
        },
      ],
      env: { STRIPE_API_KEY_ACME: API_KEY, PROVIDER_API_READS_PER_SECOND: '1000' },
    }),
    (started) => ({ db, t } = started),
  );
  afterAll(async () => {
    await stripe?.stop();
  });

  it('previews from the body when no reading is stored, from the stored reading otherwise; no call to Stripe either way', async () => {
    await createOrder(t, 'cf-1', 1000);
    stripe.addPayment('pi_cf-1', { amount: 1000, currency: 'eur', orderId: 'cf-1' });
    const fresh = paymentIntentEvent('payment_intent.succeeded', { orderId: 'cf-1' });
    await postStripe(t, fresh);
    const { id } = await inboxRow(db, fresh.id as string);
    expect((await request(t.url).post(`/admin/inbox/${id}/quarantine`).set(op).send({ reason: 'hold' })).status).toBe(200);
    const calls = stripe.calls.length;
    const skipped = await request(t.url).post(`/admin/inbox/${id}/preview`).set(op).send({});
    expect(skipped.body).toMatchObject({ confirmRead: 'skipped', outcome: { status: 'done' }, transitions: [{ to: 'paid' }] });
    expect(stripe.calls.length).toBe(calls);

    // Replayed and processed: the worker reads Stripe once and stores the reading on the row.
    expect((await request(t.url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'go' })).status).toBe(200);
    await drain(t);
    expect(stripe.calls.length).toBe(calls + 1);
    const stored = await request(t.url).post(`/admin/inbox/${id}/preview`).set(op).send({});
    expect(stored.body).toMatchObject({ confirmRead: 'stored_reading', outcome: { status: 'done' }, transitions: [], operations: [] });
    expect(stripe.calls.length).toBe(calls + 1);
  });
});
