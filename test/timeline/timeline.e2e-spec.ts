import request from 'supertest';
import { TransientError } from '../../src/common/errors';
import { WorkerFaults } from '../../src/inbox/worker-faults';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { signStripe } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { createOrder, drain, ENDPOINTS, inboxRow, paymentIntentEvent, postStripe, STRIPE_SECRET, worker } from '../inbox/worker-fixtures';

interface Entry {
  at: string;
  kind: string;
  detail: Record<string, unknown>;
}

/** GET /admin/inbox/:id/timeline: one event's story, read across inbox, orders, outbox and audit. */
describe('event timeline', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: ENDPOINTS,
      env: { ERP_URL: erp.url, EMAIL_URL: email.sendUrl, RETRY_BASE_MS: '1000', RETRY_MAX_MS: '1000', RELAY_TIMEOUT_MS: '2000' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  const timeline = (id: string, token = VIEWER_TOKEN) =>
    request(t.url).get(`/admin/inbox/${id}/timeline`).set('Authorization', `Bearer ${token}`);

  it('tells the whole story in order: receipts, attempts, the transition, operations, deliveries, operator actions', async () => {
    await createOrder(t, 'tl-1', 4200, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'tl-1', amount: 4200 });
    let failures = 1;
    t.app.get(WorkerFaults).beforeComplete = async () => {
      if (failures-- > 0) throw new TransientError('flaky_mapping');
    };
    await postStripe(t, event);
    // The same copy again: a second receipt, no second row.
    const again = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-acme').set(again.headers).send(again.body)).body.status).toBe('duplicate');

    await worker(t).runOnce();
    t.clock.advance(1000);
    await drain(t);
    t.app.get(WorkerFaults).beforeComplete = async () => undefined;

    erp.failNext(1, { kind: 'status', status: 429, headers: { 'Retry-After': '1' } });
    const relay = t.app.get(OutboxRelay);
    await relay.runOnce();
    t.clock.advance(2000);
    await relay.runOnce();

    const row = await inboxRow(db, event.id as string);
    const replay = await request(t.url)
      .post(`/admin/inbox/${row.id}/replay`)
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ reason: 'check the timeline' });
    expect(replay.status).toBe(200);
    await drain(t);

    const res = await timeline(row.id);
    expect(res.status).toBe(200);
    expect(res.body.event).toMatchObject({ id: row.id, status: 'done', deliveries: 2, verifiedWith: 'current' });
    expect(res.body.event.payload).toBeUndefined();
    const entries: Entry[] = res.body.entries;
    const of = (kind: string) => entries.filter((e) => e.kind === kind).map((e) => e.detail);

    expect(entries[0]).toMatchObject({
      kind: 'received',
      detail: { endpointId: 'stripe-acme', verifiedWith: 'current', provider: 'stripe' },
    });
    expect(of('redelivered')).toEqual([{ deliveries: 2, digestConflicts: 0 }]);
    const instance = worker(t).workerId;
    expect(of('attempt')).toEqual([
      { attempt: 1, outcome: 'retry', reason: null, error: 'TransientError: flaky_mapping', instance },
      { attempt: 2, outcome: 'done', reason: null, error: null, instance },
      // The replay's attempt changed nothing on the order (already paid) and wrote no operation.
      { attempt: 1, outcome: 'done', reason: null, error: null, instance },
    ]);
    expect(of('order_transition')).toEqual([{ tenantId: 'acme', orderId: 'tl-1', from: 'awaiting_payment', to: 'paid' }]);
    expect(
      of('operation_created')
        .map((d) => d.operationKey)
        .sort(),
    ).toEqual(['email:receipt:acme:tl-1', 'erp:order-paid:acme:tl-1']);
    const erpAttempts = of('delivery_attempt').filter((d) => d.operationKey === 'erp:order-paid:acme:tl-1');
    expect(erpAttempts).toMatchObject([
      { attempt: 1, outcome: 'retry', statusCode: 429, retryAfterMs: 1000, outcomeQuery: null, error: 'HTTP 429', instance: relay.relayId },
      { attempt: 2, outcome: 'delivered', statusCode: 200, retryAfterMs: null, error: null },
    ]);
    expect(typeof erpAttempts[0].durationMs).toBe('number');
    expect(of('delivery_attempt').filter((d) => d.operationKey === 'email:receipt:acme:tl-1')).toMatchObject([
      { attempt: 1, outcome: 'delivered' },
    ]);
    expect(of('operator_action')).toEqual([
      {
        actor: 'ops',
        role: 'operator',
        action: 'inbox.replay',
        target: `inbox:${row.id}`,
        reason: 'check the timeline',
        beforeStatus: 'done',
        afterStatus: 'pending',
      },
    ]);
    expect(res.body.operations.map((o: { status: string }) => o.status)).toEqual(['delivered', 'delivered']);

    // In order of time (each as its writer recorded it: this test's clock runs ahead of PostgreSQL's).
    const times = entries.map((e) => Date.parse(e.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('a bulk replay that included the event is among its operator actions', async () => {
    const event = paymentIntentEvent('payment_intent.created', { orderId: 'tl-2' });
    await postStripe(t, event);
    await drain(t);
    const row = await inboxRow(db, event.id as string);
    const bulk = await request(t.url)
      .post('/admin/inbox/replay')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      // The event was ignored (no handler): a bulk replay takes ignored rows only when the filter names them.
      .send({ filter: { status: 'ignored', type: 'payment_intent.created' }, dryRun: false, reason: 'reprocess created events' });
    expect(bulk.body).toMatchObject({ count: 1 });
    const res = await timeline(row.id);
    expect(res.body.entries.filter((e: Entry) => e.kind === 'operator_action').map((e: Entry) => e.detail)).toMatchObject([
      { action: 'inbox.replay_bulk', reason: 'reprocess created events', afterStatus: 'pending' },
    ]);
    expect(res.body.operations).toEqual([]);
  });

  it('an unknown id is 404, a malformed id 400, no token 401', async () => {
    expect((await timeline('999999999')).body).toMatchObject({ reason: 'inbox_event_not_found' });
    expect((await timeline('abc')).status).toBe(400);
    expect((await request(t.url).get('/admin/inbox/1/timeline')).status).toBe(401);
  });
});
