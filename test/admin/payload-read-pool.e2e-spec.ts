import request from 'supertest';
import { DataSource, QueryRunner } from 'typeorm';
import { createOrder, drain, ENDPOINTS, paymentIntentEvent, postStripe } from '../inbox/worker-fixtures';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp } from '../support/test-app';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/**
 * An operator's audited payload read holds one pooled connection: its lookup ran outside its
 * audit's transaction and took a second, so with the pool busy, reads waited on each other until
 * the acquire timed out (503), and a few at once could hold every connection.
 */
describe('admin: an audited payload read takes one pooled connection', () => {
  let db: TestDatabase;
  let t: TestApp;
  let held: QueryRunner | undefined;
  useTestApp({ endpoints: ENDPOINTS, env: { DATABASE_POOL_SIZE: '2', ROLES: 'api,worker' } }, (started) => ({ db, t } = started));
  afterEach(async () => {
    await held?.release();
    held = undefined;
  });

  it('answers an inbox and an outbox payload read with one of two connections taken', async () => {
    await createOrder(t, 'pool-1', 4200, 'eur');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pool-1', amount: 4200 });
    await postStripe(t, event);
    await drain(t);
    const [inbox] = await db.query<{ id: string }>(`SELECT id::text FROM webhook_inbox WHERE event_id = $1`, [event.id]);
    const [outbox] = await db.query<{ id: string }>(`SELECT id::text FROM outbox ORDER BY id LIMIT 1`);

    held = t.app.get(DataSource).createQueryRunner();
    await held.connect();

    const read = await request(t.url).get(`/admin/inbox/${inbox.id}`).set(op);
    expect(read.status).toBe(200);
    expect(read.body.payload).toMatchObject({ id: event.id });
    const entry = await request(t.url).get(`/admin/outbox/${outbox.id}`).set(op);
    expect(entry.status).toBe(200);
    expect(entry.body.payload).toBeDefined();
    expect(await db.query(`SELECT action FROM admin_audit ORDER BY id`)).toEqual([
      { action: 'inbox.payload_read' },
      { action: 'outbox.payload_read' },
    ]);
  }, 30_000);
});
