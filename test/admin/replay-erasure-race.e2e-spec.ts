import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { InboxAdminService } from '../../src/inbox/inbox-admin.service';
import { CustomerErasureService } from '../../src/orders/customer-erasure.service';
import { OrdersService } from '../../src/orders/orders.service';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { drain, ENDPOINTS, inboxRow, paymentIntentEvent, postStripe, TENANT } from '../inbox/worker-fixtures';

const actor = { name: 'ops', role: 'operator' };

/**
 * An erasure deletes a settled event's payload from its day while it holds the event's row. A
 * replay that waited for that row must see the payload gone once it has the row: it answers
 * `payload_purged` and leaves the row done, never re-queues an event with nothing to process.
 */
describe('a replay that waits for an erasure of its event', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}` } }, (s) => ({ db, t } = s));

  const lockWaits = async () =>
    (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      )
    )[0].n;

  it('single and bulk: refused, the row stays done', async () => {
    await t.app
      .get(OrdersService)
      .create({ tenantId: TENANT, id: 'race-1', totalMinor: 1000, currency: 'eur', customerEmail: 'r@example.com' });
    const paid = paymentIntentEvent('payment_intent.succeeded', { orderId: 'race-1' });
    await postStripe(t, paid);
    await drain(t);
    const row = await inboxRow(db, paid.id as string);
    expect(row.status).toBe('done');

    // The erasure is held at its audit row, after it deleted the payload, holding the event's row.
    const blocker = new Client({ connectionString: db.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE admin_audit IN SHARE MODE');
    const erasure = t.app.get(CustomerErasureService).erase({ tenantId: TENANT, orderId: 'race-1' }, { actor, reason: 'gdpr' });
    await waitFor('the erasure at its audit row', async () => (await lockWaits()) === 1);
    const admin = t.app.get(InboxAdminService);
    const single = admin.replay(actor, String(row.id), 'replay', undefined).then(
      (r) => r.after,
      (e: { reason?: string }) => e.reason,
    );
    const bulk = admin.bulkReplay(actor, { tenant: TENANT }, false, 'replay all');
    await waitFor('both replays at the row', async () => (await lockWaits()) === 3);
    await blocker.query('COMMIT');
    await blocker.end();
    await erasure;

    expect(await single).toBe('payload_purged');
    expect(await bulk).toMatchObject({ count: 0 });
    const after = await inboxRow(db, paid.id as string);
    expect([after.status, after.has_payload]).toEqual(['done', false]);
  });
});
