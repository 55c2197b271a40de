import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const viewer = { Authorization: `Bearer ${VIEWER_TOKEN}` };

describe('admin outbox, orders and stats', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({}, (started) => ({ db, t } = started));

  async function outboxRow(key: string, status: string, extra = ''): Promise<string> {
    const [row] = await db.query<{ id: string }>(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, attempts, last_error, outcome_unknown ${extra ? ', delivered_at' : ''})
       VALUES ($1, 'erp', 'order-paid', 'acme', '{"to":"secret@example.com"}', $2, 12, 'timeout', $2 = 'unresolved' ${extra ? ', now()' : ''})
       RETURNING id::text`,
      [key, status],
    );
    return row.id;
  }

  it('retries a dead entry under the same operation key, audited; refuses a delivered one', async () => {
    const id = await outboxRow('erp:order-paid:acme:o1', 'dead');
    const viewerTry = await request(t.url).post(`/admin/outbox/${id}/retry`).set(viewer).send({ reason: 'x' });
    expect(viewerTry.status).toBe(403);

    const res = await request(t.url).post(`/admin/outbox/${id}/retry`).set(op).send({ reason: 'ERP fixed the mapping' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, before: 'dead', after: 'pending' });
    expect(await db.query('SELECT operation_key, status, attempts FROM outbox WHERE id = $1', [id])).toEqual([
      { operation_key: 'erp:order-paid:acme:o1', status: 'pending', attempts: 0 },
    ]);
    expect(
      await db.query(`SELECT action, reason, before_status, after_status FROM admin_audit WHERE target = $1`, [`outbox:${id}`]),
    ).toEqual([{ action: 'outbox.retry', reason: 'ERP fixed the mapping', before_status: 'dead', after_status: 'pending' }]);

    const delivered = await outboxRow('erp:order-paid:acme:o2', 'delivered', 'x');
    const refused = await request(t.url).post(`/admin/outbox/${delivered}/retry`).set(op).send({ reason: 'again' });
    expect(refused.status).toBe(409);
    expect(refused.body.reason).toBe('not_retryable');
    expect(await db.query(`SELECT * FROM admin_audit WHERE target = $1`, [`outbox:${delivered}`])).toEqual([]);
  });

  it('resolves unresolved entries only, recording the decision', async () => {
    const a = await outboxRow('erp:order-paid:acme:o3', 'unresolved');
    const b = await outboxRow('erp:order-paid:acme:o4', 'unresolved');
    const dead = await outboxRow('erp:order-paid:acme:o5', 'dead');

    const delivered = await request(t.url)
      .post(`/admin/outbox/${a}/resolve`)
      .set(op)
      .send({ outcome: 'delivered', reason: 'seen in ERP UI' });
    expect(delivered.body).toMatchObject({ before: 'unresolved', after: 'delivered' });
    const retry = await request(t.url).post(`/admin/outbox/${b}/resolve`).set(op).send({ outcome: 'retry', reason: 'not in ERP' });
    expect(retry.body).toMatchObject({ before: 'unresolved', after: 'pending' });
    const rows = await db.query(
      `SELECT id::text, status, delivered_at IS NOT NULL AS has_delivered_at FROM outbox WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [[a, b]],
    );
    expect(rows).toEqual([
      { id: a, status: 'delivered', has_delivered_at: true },
      { id: b, status: 'pending', has_delivered_at: false },
    ]);
    const audit = await db.query(`SELECT target, details FROM admin_audit WHERE action = 'outbox.resolve' ORDER BY id`);
    expect(audit).toEqual([
      { target: `outbox:${a}`, details: { outcome: 'delivered' } },
      { target: `outbox:${b}`, details: { outcome: 'retry' } },
    ]);

    const wrong = await request(t.url).post(`/admin/outbox/${a}/resolve`).set(op).send({ outcome: 'delivered', reason: 'x' });
    expect(wrong.status).toBe(409);
    expect(wrong.body.reason).toBe('not_unresolved');
    const badOutcome = await request(t.url).post(`/admin/outbox/${dead}/resolve`).set(op).send({ outcome: 'maybe', reason: 'x' });
    expect(badOutcome.status).toBe(400);
    expect(badOutcome.body.reason).toBe('invalid_outcome');
  });

  it('lists the outbox with filters and shows payloads to operators only', async () => {
    const list = await request(t.url).get('/admin/outbox').query({ status: 'pending', destination: 'erp' }).set(viewer);
    expect(list.status).toBe(200);
    expect(list.body.items.length).toBeGreaterThan(0);
    for (const item of list.body.items) {
      expect(item.status).toBe('pending');
      expect(item).not.toHaveProperty('payload');
    }
    const id = list.body.items[0].id;
    expect((await request(t.url).get(`/admin/outbox/${id}`).set(viewer)).body).not.toHaveProperty('payload');
    expect((await request(t.url).get(`/admin/outbox/${id}`).set(op)).body.payload).toEqual({ to: 'secret@example.com' });
  });

  it('creates an order as an operator (409 when it exists), and shows it', async () => {
    const body = { tenantId: 'acme', id: 'ord-1', totalMinor: 4200, currency: 'EUR', customerEmail: 'buyer@example.com' };
    expect((await request(t.url).post('/admin/orders').set(viewer).send(body)).status).toBe(403);
    const created = await request(t.url).post('/admin/orders').set(op).send(body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ tenantId: 'acme', id: 'ord-1', status: 'awaiting_payment', currency: 'eur', totalMinor: 4200 });
    const again = await request(t.url).post('/admin/orders').set(op).send(body);
    expect(again.status).toBe(409);
    expect(again.body.reason).toBe('order_exists');
    expect(await db.query(`SELECT action, target FROM admin_audit WHERE action = 'order.create'`)).toEqual([
      { action: 'order.create', target: 'order:acme/ord-1' },
    ]);

    const asOp = await request(t.url).get('/admin/orders/acme/ord-1').set(op);
    expect(asOp.body).toMatchObject({ status: 'awaiting_payment', customerEmail: 'buyer@example.com' });
    const asViewer = await request(t.url).get('/admin/orders/acme/ord-1').set(viewer);
    expect(asViewer.body).toMatchObject({ status: 'awaiting_payment' });
    expect(asViewer.body).not.toHaveProperty('customerEmail');
    const missing = await request(t.url).get('/admin/orders/acme/nope').set(viewer);
    expect(missing.status).toBe(404);
    expect(missing.body.reason).toBe('order_not_found');
    const bad = await request(t.url)
      .post('/admin/orders')
      .set(op)
      .send({ ...body, totalMinor: 1.5 });
    expect(bad.status).toBe(400);
    // A tenant "acme:x" would share acme's operation keys (`erp:order-paid:acme:x:1` is also acme's order "x:1").
    const colliding = await request(t.url)
      .post('/admin/orders')
      .set(op)
      .send({ ...body, tenantId: 'acme:x', id: '1' });
    expect([colliding.status, colliding.body.reason]).toEqual([400, 'invalid_body']);
    expect(await db.query(`SELECT 1 FROM orders WHERE tenant_id = 'acme:x'`)).toEqual([]);
  });

  it('reports stats: backlog, oldest pending age, failures and latency percentiles', async () => {
    await db.query(`
      INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sha256,
                                 verified_with, status, attempts, last_error, received_at, completed_at)
      SELECT 'acme:stripe:acct', 'evt_' || g, 'acme', 'stripe', 'stripe-acme', 'charge.refunded', '{}', repeat('a', 64), 'k',
             CASE WHEN g <= 10 THEN 'done' WHEN g <= 13 THEN 'quarantined' ELSE 'pending' END,
             CASE WHEN g > 10 THEN 3 ELSE 0 END,
             CASE WHEN g > 10 THEN 'order not found' END,
             now() - interval '120 seconds',
             CASE WHEN g <= 10 THEN now() - interval '120 seconds' + g * interval '1 second' END
        FROM generate_series(1, 15) g`);
    const res = await request(t.url).get('/admin/stats').set(viewer);
    expect(res.status).toBe(200);
    const { inbox, outbox } = res.body;
    expect(inbox.byStatus).toEqual({ done: 10, quarantined: 3, pending: 2 });
    expect(inbox.quarantined).toBe(3);
    expect(inbox.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(119);
    expect(inbox.retrying).toBe(2);
    expect(inbox.recurringFailures[0]).toEqual({ provider: 'stripe', type: 'charge.refunded', error: 'order not found', count: 5 });
    expect(inbox.acceptToDoneSeconds.completed).toBe(10);
    expect(inbox.acceptToDoneSeconds.p50).toBeCloseTo(5.5, 3);
    expect(inbox.acceptToDoneSeconds.p99).toBeCloseTo(9.91, 3);
    expect(outbox.byStatus.unresolved).toBeUndefined();
    expect(outbox.dead).toBe(1);
    expect(outbox.recurringFailures[0]).toMatchObject({ destination: 'erp', error: 'timeout' });
    // Rates over the last five minutes and open work per endpoint (the console's overview).
    expect(res.body.rates).toMatchObject({ windowSeconds: 300, acceptedPerMinute: 15 / 5, donePerMinute: 10 / 5 });
    expect(res.body.byEndpoint).toEqual([{ endpoint: 'stripe-acme', pending: 2, processing: 0, quarantined: 3, acceptedPerMinute: 3 }]);
  });

  it('tells a token who it is: its name and role', async () => {
    expect((await request(t.url).get('/admin/session').set(viewer)).body).toEqual({ name: 'view', role: 'viewer' });
    expect((await request(t.url).get('/admin/session').set(op)).body).toEqual({ name: 'ops', role: 'operator' });
    const bad = await request(t.url).get('/admin/session').set({ Authorization: 'Bearer nope' });
    expect(bad.status).toBe(401);
    expect(bad.body.reason).toBe('invalid_token');
  });
});
