import { createTestDatabase, TestDatabase } from '../support/test-database';
import request from 'supertest';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import {
  createOrder,
  ENDPOINTS,
  inboxRow,
  orderRow,
  paymentIntentEvent,
  postStripe,
  STRIPE_SECRET,
  TENANT,
  worker,
} from './worker-fixtures';

/**
 * A rolling deploy that changes the endpoints file: an instance with the new file accepts an event
 * (200 to Stripe), and a worker with the old file claims it from the shared inbox. Found by an
 * adversarial review; both tests failed before: the old worker settled the event `ignored`
 * (`endpoint_not_configured`, `unexpected_source`), Stripe's resends were duplicates, and the
 * payment was never applied (the second could not even be replayed).
 */
describe('a worker whose endpoints file is older than the instance that accepted the event', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const NEW = { id: 'stripe-new', provider: 'stripe', tenantId: TENANT, secrets: [{ label: 'current', value: STRIPE_SECRET }] };

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await startTestApp({ databaseUrl: db.url, endpoints: [...ENDPOINTS, NEW] }); // new file
    b = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS }); // old file, still rolling
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await db.drop();
  });

  it('does not settle an event of an endpoint it does not know: the payment is applied once the new config is everywhere', async () => {
    await createOrder(a, 'o-new');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-new' });
    await postStripe(a, event, 'stripe-new'); // 200 accepted by the new instance
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'pending' });

    await worker(b).runOnce(); // the old instance's worker claims it first

    // Then the new instance's worker runs: the event must still be there for it.
    a.clock.advance(3_600_000);
    await worker(a).runOnce();
    const row = await inboxRow(db, event.id as string);
    expect({ status: row.status, reason: row.status_reason }).toEqual({ status: 'done', reason: null });
    expect((await orderRow(db, 'o-new')).status).toBe('paid');
  });

  it("an endpoint's corrected `expect`: the old worker's refusal is quarantined, and replayable once the fix is everywhere", async () => {
    const old = { ...ENDPOINTS[0], id: 'stripe-connect', expect: { account: 'acct_OLD' } };
    const fixed = { ...old, expect: { account: 'acct_NEW' } };
    const c = await startTestApp({ databaseUrl: db.url, endpoints: [fixed] }); // deployed with the fix
    const d = await startTestApp({ databaseUrl: db.url, endpoints: [old] }); // not yet replaced
    try {
      await createOrder(c, 'o-connect');
      const event: Record<string, unknown> = {
        ...paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-connect' }),
        account: 'acct_NEW',
      };
      await postStripe(c, event, 'stripe-connect');
      expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'pending' });

      await worker(d).runOnce(); // the old instance's worker claims it
      // Quarantined with its reason, not settled: an operator replays it once every instance agrees.
      const row = await inboxRow(db, event.id as string);
      expect(row).toMatchObject({ status: 'quarantined', status_reason: 'unexpected_source' });
      const replay = await request(c.url)
        .post(`/admin/inbox/${row.id}/replay`)
        .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
        .send({ reason: 'was accepted, never applied' });
      expect(replay.status).toBe(200);
      await worker(c).runOnce();
      expect((await orderRow(db, 'o-connect')).status).toBe('paid');
    } finally {
      await c.close();
      await d.close();
    }
  });
});
