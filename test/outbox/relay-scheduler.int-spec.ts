import { DataSource } from 'typeorm';
import { runInTransaction } from '../../src/database/unit-of-work';
import { OutboxWriter } from '../../src/outbox/outbox-writer';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { outboxRow } from './outbox-rows';

describe('relay scheduler (ROLES=relay)', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  let closed = false;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    // A poll far longer than the test: only the NOTIFY wake-up can deliver in time.
    t = await startTestApp({
      databaseUrl: db.url,
      env: { ROLES: 'relay', ERP_URL: erp.url, EMAIL_URL: email.sendUrl, RELAY_POLL_MS: '600000' },
    });
  });
  afterAll(async () => {
    if (!closed) await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  async function writeErpEntry(orderId: string): Promise<string> {
    const key = `erp:order-paid:acme:${orderId}`;
    await runInTransaction(t.app.get(DataSource), (tx) =>
      t.app.get(OutboxWriter).write(tx, [
        {
          operationKey: key,
          destination: 'erp',
          operationType: 'order.paid',
          tenantId: 'acme',
          sourceEventId: null,
          payload: {
            operationKey: key,
            type: 'order.paid',
            tenantId: 'acme',
            orderId,
            amountMinor: 1999,
            currency: 'usd',
            paymentId: `pi_${orderId}`,
            occurredAt: '2026-01-02T00:00:00.000Z',
          },
        },
      ]),
    );
    return key;
  }

  it('wakes up on the outbox notification and delivers', async () => {
    const key = await writeErpEntry('s-1');
    await waitFor('the entry delivered', async () => (await outboxRow(db, key)).status === 'delivered');
    expect(erp.posts(key)).toHaveLength(1);
  });

  it('an entry committed while a round waits on a slow delivery is delivered by a second round meanwhile', async () => {
    erp.failNext(1, { kind: 'hold' });
    const slow = await writeErpEntry('s-slow');
    await erp.waitForRequests(erp.requests.length + 1);
    const quick = await writeErpEntry('s-quick');
    await waitFor('the quick entry delivered', async () => (await outboxRow(db, quick)).status === 'delivered');
    expect(await outboxRow(db, slow)).toMatchObject({ status: 'delivering' });
    erp.release(200);
    await waitFor('the slow entry delivered', async () => (await outboxRow(db, slow)).status === 'delivered');
    expect(erp.posts(slow)).toHaveLength(1);
    expect(erp.posts(quick)).toHaveLength(1);
  });

  it('shutdown waits for the delivery in flight and records it', async () => {
    erp.failNext(1, { kind: 'hold' });
    const key = await writeErpEntry('s-2');
    await erp.waitForRequests(erp.requests.length + 1);
    closed = true;
    const closing = t.close();
    erp.release(200);
    await closing;
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', locked_by: null });
    expect(erp.effects.has(key)).toBe(true);
  });
});
