import { AuditService } from '../../src/audit/audit.service';
import { CustomerErasureService } from '../../src/orders/customer-erasure.service';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { ENDPOINTS, inboxRow, paymentIntentEvent, postStripe } from '../inbox/worker-fixtures';

/**
 * Two operators erase two customers whose addresses are both in one open (pending) event. The
 * second erasure waits for the first's row lock, then must redact the payload as the first left
 * it. Found by an adversarial review: its lock and read were one statement, which redacted the
 * payload its snapshot had read before the first committed, writing the first customer's address
 * back, though the first erasure had answered complete.
 */
describe('two concurrent erasures of one open event', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS }, (s) => ({ db, t } = s));

  const lockWaits = async () =>
    (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      )
    )[0].n;

  it('the first erasure stays done', async () => {
    const event = paymentIntentEvent('payment_intent.payment_failed', { orderId: 'shared-1' });
    const object = (event.data as any).object;
    object.receipt_email = 'alice@example.com';
    object.shipping = { name: 'Bob', email: 'bob@example.com' };
    await postStripe(t, event);
    const before = await inboxRow(db, event.id as string);
    expect(['pending', 'processing']).toContain(before.status);

    // Alice's erasure is held at the audit row of its payload batch: it has redacted and holds the row.
    const audit = t.app.get(AuditService);
    const original = audit.record.bind(audit);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held = false;
    jest.spyOn(audit, 'record').mockImplementation(async (tx, who, entry) => {
      if (who.name === 'ops-alice' && entry.action === 'customer.erase_payloads') {
        held = true;
        await gate;
      }
      return original(tx, who, entry);
    });
    const erasure = t.app.get(CustomerErasureService);
    const alice = erasure.erase({ email: 'alice@example.com' }, { actor: { name: 'ops-alice', role: 'operator' }, reason: 'gdpr a' });
    await waitFor('alice held', async () => held);
    const bob = erasure.erase({ email: 'bob@example.com' }, { actor: { name: 'ops-bob', role: 'operator' }, reason: 'gdpr b' });
    await waitFor("bob's erasure waits for the row", async () => (await lockWaits()) === 1);
    release();
    const [a, b] = await Promise.all([alice, bob]);
    expect(a).toMatchObject({ complete: true, payloadsRedacted: 1 });
    expect(b).toMatchObject({ complete: true, payloadsRedacted: 1 });

    const after = await inboxRow(db, event.id as string);
    const text = JSON.stringify(after.payload);
    expect(text).not.toContain('bob@example.com');
    // Fails: alice's address is back.
    expect(text).not.toContain('alice@example.com');
  });
});
