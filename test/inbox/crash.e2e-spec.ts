import { join } from 'node:path';
import { runTsChild } from '../support/child-process';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';
import { createOrder, ENDPOINTS, inboxRow, orderRow, outboxRows, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

const LEASE_MS = 30_000;

const runWorkerChild = (args: string[]) => runTsChild(join(__dirname, 'worker-child.ts'), args);

describe('worker: a process killed between the order update and the commit [scenarios 14, 19]', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { WORKER_LEASE_MS: String(LEASE_MS) } }, (started) => ({ db, t } = started));

  it('leaves nothing of the attempt visible; after the lease expires another worker completes it once', async () => {
    await createOrder(t, 'o14');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'o14' });
    await postStripe(t, event);

    const child = await runWorkerChild([db.url, 'o14']);
    // The child really had made the change, uncommitted, when it died.
    expect(child.output).toContain('inside the transaction: order paid, outbox 2; dying before commit');
    expect(child.signal).toBe('SIGKILL');

    expect(await orderRow(db, 'o14')).toMatchObject({ status: 'awaiting_payment', provider_payment_id: null });
    expect(await outboxRows(db, 'o14')).toHaveLength(0);
    const held = await inboxRow(db, event.id as string);
    expect(held).toMatchObject({ status: 'processing', attempts: 0, completed_at: null });
    expect(child.output).toContain(`worker ${held.locked_by.replace(/:\d+$/, '')}\n`);

    // Scenario 19: the dead worker's lease protects the event until it expires.
    expect(await worker(t).runOnce()).toBe(0);
    t.clock.advance(LEASE_MS + 1);
    expect(await worker(t).runOnce()).toBe(1);

    expect(await inboxRow(db, event.id as string)).toMatchObject({
      status: 'done',
      attempts: 1,
      last_error: 'lease_expired',
      locked_by: null,
    });
    expect((await orderRow(db, 'o14')).status).toBe('paid');
    expect((await outboxRows(db, 'o14')).map((r) => r.operation_key)).toEqual(['email:receipt:acme:o14', 'erp:order-paid:acme:o14']);
    t.clock.advance(LEASE_MS + 1);
    expect(await worker(t).runOnce()).toBe(0);
  });
});
