import { DataSource } from 'typeorm';
import { runInTransaction } from '../../src/database/unit-of-work';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { OutboxRelayScheduler } from '../../src/outbox/outbox-relay.scheduler';
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

  async function writeErpEntry(orderId: string, tenantId = 'acme'): Promise<string> {
    const key = `erp:order-paid:${tenantId}:${orderId}`;
    await runInTransaction(t.app.get(DataSource), (tx) =>
      t.app.get(OutboxWriter).write(tx, [
        {
          operationKey: key,
          destination: 'erp',
          operationType: 'order.paid',
          tenantId,
          sourceEventId: null,
          payload: {
            operationKey: key,
            type: 'order.paid',
            tenantId,
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

  it("while both rounds wait on held requests, another tenant's entry this instance wrote is claimed beside them", async () => {
    // Written pending (as by another instance), so the scheduler's rounds claim them.
    const handOver = jest.spyOn(t.app.get(OutboxRelay), 'handOver').mockReturnValue(undefined);
    try {
      // Two rounds, each waiting on its held request (at most two overlap).
      erp.failNext(2, { kind: 'hold' });
      const before = erp.requests.length;
      const slow = [await writeErpEntry('s-claimed-slow-1')];
      await erp.waitForRequests(before + 1);
      slow.push(await writeErpEntry('s-claimed-slow-2'));
      await erp.waitForRequests(before + 2);
      const quick = await writeErpEntry('s-claimed-quick', 'bravo');
      await waitFor('the quick entry delivered', async () => (await outboxRow(db, quick)).status === 'delivered');
      for (const key of slow) expect(await outboxRow(db, key)).toMatchObject({ status: 'delivering' });
      erp.release(200);
      for (const key of slow) await waitFor('the slow entry delivered', async () => (await outboxRow(db, key)).status === 'delivered');
    } finally {
      handOver.mockRestore();
    }
  });

  it('shutdown waits for the deliveries in flight, handed over, claimed and claimed beside the rounds, and records them', async () => {
    erp.failNext(4, { kind: 'hold' });
    const before = erp.requests.length;
    const handed = await writeErpEntry('s-2');
    await erp.waitForRequests(before + 1);
    // Written pending (as by another instance): the two rounds claim acme's, a claim beside them bravo's.
    const handOver = jest.spyOn(t.app.get(OutboxRelay), 'handOver').mockReturnValue(undefined);
    const claimed: string[] = [];
    try {
      for (const [orderId, tenant] of [
        ['s-3', 'acme'],
        ['s-4', 'acme'],
        ['s-5', 'bravo'],
      ]) {
        claimed.push(await writeErpEntry(orderId, tenant));
        await erp.waitForRequests(before + 1 + claimed.length);
      }
    } finally {
      handOver.mockRestore();
    }
    // The relay's part of shutting down ends only once each answer is recorded (the pool closes after it).
    let stopped = false;
    const stopping = t.app
      .get(OutboxRelayScheduler)
      .onModuleDestroy()
      .then(() => (stopped = true));
    const pause = () => new Promise((resolve) => setTimeout(resolve, 200));
    for (const key of [handed, ...claimed]) {
      await pause();
      expect(stopped).toBe(false);
      erp.release(200, key);
    }
    await stopping;
    for (const key of [handed, ...claimed]) {
      expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', locked_by: null });
      expect(erp.effects.has(key)).toBe(true);
    }
    closed = true;
    await t.close();
  });
});
