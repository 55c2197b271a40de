import { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import request from 'supertest';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { signStripe } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { ENDPOINTS, paymentIntentEvent, STRIPE_SECRET } from '../inbox/worker-fixtures';

/** `00-<trace id>-<span id>-<flags>` split into its ids. */
function ids(traceparent: string | undefined): { traceId: string; spanId: string } {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(traceparent ?? '');
  if (!match) throw new Error(`not a traceparent: ${traceparent}`);
  return { traceId: match[1], spanId: match[2] };
}

/** Every string an attribute of `spans` (or of their links and events) holds, and every number. */
function attributeValues(spans: ReadableSpan[]): unknown[] {
  return spans
    .flatMap((s) => [
      ...Object.values(s.attributes),
      ...s.links.flatMap((l) => Object.values(l.attributes ?? {})),
      ...s.events.flatMap((e) => Object.values(e.attributes ?? {})),
    ])
    .flat();
}

/**
 * Tracing on (an in-memory exporter): one trace per event from the webhook
 * request through the worker to the ERP's and the email API's requests, across
 * the two hops through PostgreSQL.
 */
describe('traces: one trace per event, request -> processing -> deliveries', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  const exporter = new InMemorySpanExporter();

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    // ROLES=api: the test drives the worker and the relay, so a burst is claimed as one batch;
    // a pool of 3 gives the worker one lane, so that batch is processed in one transaction.
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: ENDPOINTS,
      env: { ERP_URL: erp.url, EMAIL_URL: email.sendUrl, DATABASE_POOL_SIZE: '3' },
      spanExporter: exporter,
    });
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  async function createOrder(id: string, totalMinor: number, customerEmail: string): Promise<void> {
    const created = await request(t.url)
      .post('/admin/orders')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ tenantId: 'acme', id, totalMinor, currency: 'eur', customerEmail, reason: 'traces' });
    expect(created.status).toBeLessThan(300);
  }

  /** Processes everything due, then delivers everything pending. */
  async function drain(): Promise<void> {
    while ((await t.app.get(InboxWorker).runOnce()) > 0);
    while ((await t.app.get(OutboxRelay).runOnce()) > 0);
  }

  it('one signed event: one trace id across the request, its processing and both deliveries; the ERP gets its traceparent', async () => {
    await createOrder('o-trace-1', 4243, 'ada.trace@example.com');
    exporter.reset();
    const event = paymentIntentEvent('payment_intent.succeeded', {
      orderId: 'o-trace-1',
      amount: 4243,
      id: 'evt_trace_1',
      paymentId: 'pi_trace_1',
    });
    const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    // The provider's own trace context: untrusted, so it may be linked but never become the parent.
    const providerTraceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const res = await request(t.url)
      .post('/webhooks/stripe-acme')
      .set({ ...signed.headers, traceparent: providerTraceparent })
      .send(signed.body);
    expect(res.body).toMatchObject({ status: 'accepted' });
    await drain();

    const spans = exporter.getFinishedSpans();
    const requestSpan = spans.find((s) => s.name === 'POST /webhooks/:endpointId')!;
    expect(requestSpan).toBeDefined();
    const traceId = requestSpan.spanContext().traceId;
    expect(traceId).not.toBe(ids(providerTraceparent).traceId);
    expect(requestSpan.parentSpanContext).toBeUndefined();
    expect(requestSpan.links.map((l) => l.context.traceId)).toEqual([ids(providerTraceparent).traceId]);
    expect(requestSpan.attributes).toMatchObject({
      'webhook.endpoint_id': 'stripe-acme',
      'webhook.provider': 'stripe',
      'webhook.event_type': 'payment_intent.succeeded',
      'webhook.outcome': 'accepted',
      'http.response.status_code': 200,
    });

    // The whole path in the request's trace.
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const names = inTrace.map((s) => s.name).sort();
    expect(names).toEqual(
      [
        'POST /webhooks/:endpointId',
        'webhook.verify',
        'webhook.commit',
        'inbox.claim_wait',
        'inbox.process',
        'inbox.handler',
        'outbox.write',
        'outbox.deliver',
        'outbox.deliver',
      ].sort(),
    );
    const processing = inTrace.find((s) => s.name === 'inbox.process')!;
    expect(processing.parentSpanContext?.spanId).toBe(requestSpan.spanContext().spanId);
    expect(processing.attributes['inbox.outcome']).toBe('done');
    const deliveries = inTrace.filter((s) => s.name === 'outbox.deliver');
    for (const delivery of deliveries) {
      expect(delivery.parentSpanContext?.spanId).toBe(processing.spanContext().spanId);
      expect(delivery.attributes).toMatchObject({ 'outbox.outcome': 'delivered', 'http.response.status_code': 200 });
    }
    expect(deliveries.map((d) => d.attributes['outbox.destination']).sort()).toEqual(['email', 'erp']);

    // The destinations received the delivery spans' traceparents: their own traces join this one.
    const erpDelivery = deliveries.find((d) => d.attributes['outbox.destination'] === 'erp')!;
    const emailDelivery = deliveries.find((d) => d.attributes['outbox.destination'] === 'email')!;
    expect(erp.posts()).toHaveLength(1);
    expect(ids(erp.posts()[0].headers.traceparent as string)).toEqual({ traceId, spanId: erpDelivery.spanContext().spanId });
    expect(ids(email.posts()[0].headers.traceparent as string)).toEqual({ traceId, spanId: emailDelivery.spanContext().spanId });

    // The rows carry the context across PostgreSQL.
    const [inboxRow] = await db.query(`SELECT trace_context FROM webhook_inbox WHERE event_id = 'evt_trace_1'`);
    expect(ids(inboxRow.trace_context)).toEqual({ traceId, spanId: requestSpan.spanContext().spanId });
    const outboxRows = await db.query(`SELECT trace_context FROM outbox ORDER BY id`);
    expect(outboxRows.map((r: { trace_context: string }) => ids(r.trace_context))).toEqual([
      { traceId, spanId: processing.spanContext().spanId },
      { traceId, spanId: processing.spanContext().spanId },
    ]);

    // No span says anything secret or personal: not the secret, the signature, the body, nor a
    // payload field (the event type is the one payload field spans name, as the issue allows).
    const forbidden = [
      STRIPE_SECRET,
      signed.headers['stripe-signature'],
      /v1=([0-9a-f]+)/.exec(signed.headers['stripe-signature'])![1],
      signed.body,
      'evt_trace_1',
      'pi_trace_1',
      'o-trace-1',
      'ada.trace@example.com',
    ];
    const values = attributeValues(spans);
    expect(values.length).toBeGreaterThan(20);
    for (const value of values) {
      expect(value).not.toBe(4243);
      for (const secret of forbidden) expect(String(value)).not.toContain(secret);
    }
    for (const span of spans) for (const secret of forbidden) expect(span.name).not.toContain(secret);
  });

  it('50 events at once, processed as one batch: each event keeps its own trace, and its own trace id reaches its own ERP request', async () => {
    const n = 50;
    for (let i = 0; i < n; i++) await createOrder(`o-batch-${i}`, 1000 + i, `b${i}@example.com`);
    exporter.reset();
    erp.requests.length = 0;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) => {
        const event = paymentIntentEvent('payment_intent.succeeded', { orderId: `o-batch-${i}`, amount: 1000 + i, id: `evt_batch_${i}` });
        const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
        return request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
      }),
    );
    expect(answers.map((a) => a.body.status)).toEqual(Array(n).fill('accepted'));
    await drain();

    const spans = exporter.getFinishedSpans();
    const batches = spans.filter((s) => s.name === 'inbox.batch');
    expect(batches).toHaveLength(1);
    const requestSpans = spans.filter((s) => s.name === 'POST /webhooks/:endpointId');
    expect(requestSpans).toHaveLength(n);
    const requestTraces = new Set(requestSpans.map((s) => s.spanContext().traceId));
    expect(requestTraces.size).toBe(n);
    // The batch has no single parent: it is a trace of its own, linking all fifty.
    expect(requestTraces.has(batches[0].spanContext().traceId)).toBe(false);
    expect(new Set(batches[0].links.map((l) => l.context.traceId))).toEqual(requestTraces);

    // Per order: the trace its request started (stored in its inbox row) is the one its ERP request carries.
    const rows: { order_id: string; trace_context: string }[] = await db.query(
      `SELECT p.payload->'data'->'object'->'metadata'->>'order_id' AS order_id, i.trace_context
         FROM webhook_inbox i JOIN webhook_inbox_payloads p ON p.day = i.payload_day AND p.inbox_id = i.id
        WHERE i.event_id LIKE 'evt_batch_%'`,
    );
    expect(rows).toHaveLength(n);
    const erpPosts = erp.posts();
    expect(erpPosts).toHaveLength(n);
    for (const row of rows) {
      const { traceId } = ids(row.trace_context);
      expect(requestTraces.has(traceId)).toBe(true);
      const post = erpPosts.find((p) => JSON.parse(p.body).orderId === row.order_id)!;
      expect(ids(post.headers.traceparent as string).traceId).toBe(traceId);
      const processing = spans.filter((s) => s.name === 'inbox.process' && s.spanContext().traceId === traceId);
      expect(processing).toHaveLength(1);
    }
    expect(new Set(erpPosts.map((p) => ids(p.headers.traceparent as string).traceId)).size).toBe(n);
  });
});

describe('traces off (the default)', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { ERP_URL: erp.url, EMAIL_URL: email.sendUrl } });
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  it('stores no trace context and sends no traceparent, even when the provider sent one', async () => {
    expect(t.config.tracing.enabled).toBe(false);
    await request(t.url)
      .post('/admin/orders')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ tenantId: 'acme', id: 'o-off-1', totalMinor: 1000, currency: 'eur', customerEmail: 'off@example.com', reason: 'traces off' })
      .expect(201);
    const signed = signStripe(
      paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-off-1' }),
      STRIPE_SECRET,
      Math.floor(t.clock.now().getTime() / 1000),
    );
    const res = await request(t.url)
      .post('/webhooks/stripe-acme')
      .set({ ...signed.headers, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })
      .send(signed.body);
    expect(res.body).toMatchObject({ status: 'accepted' });
    while ((await t.app.get(InboxWorker).runOnce()) > 0);
    while ((await t.app.get(OutboxRelay).runOnce()) > 0);
    expect(await db.query(`SELECT trace_context FROM webhook_inbox`)).toEqual([{ trace_context: null }]);
    expect(await db.query(`SELECT trace_context FROM outbox`)).toEqual([{ trace_context: null }, { trace_context: null }]);
    expect(erp.posts()).toHaveLength(1);
    expect(erp.posts()[0].headers.traceparent).toBeUndefined();
    expect(email.posts()[0].headers.traceparent).toBeUndefined();
  });
});
