import { DataSource } from 'typeorm';
import { runInTransaction } from '../../src/database/unit-of-work';
import { effectsOf } from '../../src/orders/order-effects';
import { OutboxRelay, RELAY_BATCH_SIZE } from '../../src/outbox/outbox-relay';
import { OutboxWriter } from '../../src/outbox/outbox-writer';
import { OutboxRepository } from '../../src/outbox/outbox.repository';
import { FakeDestination, startFakeErp } from '../support/fake-destinations';
import { startTestApp, TestApp, useTestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { insertErpRow, paidOrder } from './outbox-rows';

/** The relay's claim within one destination serves the tenants with due entries in turn (issue 34). */
describe("fairness: one tenant's backlog at a destination does not delay another tenant's entries", () => {
  let t: TestApp;
  let db: TestDatabase;
  useTestApp({ env: { ERP_URL: 'http://127.0.0.1:9/erp' } }, (started) => ({ t, db } = started));

  it("a claim with a budget of 10 takes the other tenant's entries and the backlog's oldest, in order", async () => {
    const backlog: string[] = [];
    for (let i = 0; i < 100; i++) backlog.push(await insertErpRow(db, `a${i}`, 'acme'));
    const others = [await insertErpRow(db, 'b1', 'bravo'), await insertErpRow(db, 'b2', 'bravo')];

    const claim = (relay: string) => t.app.get(OutboxRepository).claim(relay, t.clock.now(), 30_000, new Map([['erp', 10]]), 64);
    const first = await claim('relay:1');
    const keys = (tenant: string, c: typeof first) =>
      c.entries
        .filter((e) => e.tenantId === tenant)
        .map((e) => e.operationKey)
        .sort();
    expect(keys('bravo', first)).toEqual(others.sort());
    expect(keys('acme', first)).toEqual(backlog.slice(0, 8).sort());

    const second = await claim('relay:2');
    expect(keys('acme', second)).toEqual(backlog.slice(8, 18).sort());
  });
});

describe('while tenants share a destination, the relay claims what it can start soon, so the next claim (and the next tenant) comes soon', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let t: TestApp;
  useErpApp({ DESTINATION_ERP_CONCURRENCY: '2' }, (started) => ({ db, erp, t } = started));

  afterEach(async () => {
    erp.failAlways(undefined);
    await db.query(`DELETE FROM outbox`);
  });

  it('while two tenants have entries due, a round takes twice the concurrency at a slow pace; one tenant alone, a batch', async () => {
    // 40 ms a request: more than the 25 ms an entry may wait here, so the bound is two waves of requests.
    erp.failAlways({ kind: 'slow', ms: 40 });
    for (let i = 0; i < 200; i++) await insertErpRow(db, `a${i}`, 'acme');
    for (let i = 0; i < 100; i++) await insertErpRow(db, `b${i}`, 'bravo');
    const relay = t.app.get(OutboxRelay);
    // The first claim finds both tenants; each round after it takes two waves of the concurrency (2).
    expect(await relay.runOnce()).toBe(64);
    expect(await relay.runOnce()).toBe(4);
    expect(await relay.runOnce()).toBe(4);
    await db.query(`DELETE FROM outbox WHERE tenant_id = 'bravo'`);
    // acme alone: the round after the one that finds it alone takes a batch.
    await relay.runOnce();
    expect(await relay.runOnce()).toBe(RELAY_BATCH_SIZE);
  });
});

describe("a tenant with nothing in line at a busy destination joins this relay's queue by hand-over, in its turn", () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let t: TestApp;
  useErpApp({ ROLES: 'api,relay', DESTINATION_ERP_CONCURRENCY: '1', RELAY_POLL_MS: '600000' }, (started) => ({ db, erp, t } = started));
  beforeAll(async () => {
    // The relay's first round has read the destination's shared state: it may hand over.
    await waitFor('the destination to be known', async () => (await db.query('SELECT 1 FROM outbox_destinations')).length > 0);
    await t.app.get(OutboxRelay).runOnce();
  });

  const key = (tenant: string, order: string) => `erp:order-paid:${tenant}:${order}`;

  /** A business transaction of `tenant` writing its orders' ERP operations through the real writer. */
  async function pay(tenant: string, ...orderIds: string[]): Promise<void> {
    const effects = orderIds.flatMap((orderId) =>
      effectsOf({ ...paidOrder(orderId), tenantId: tenant }, 'paid', {
        paymentId: `pi_${orderId}`,
        occurredAt: '2026-12-01T10:00:00.000Z',
        sourceEventId: '1',
      }).filter((e) => e.destination === 'erp'),
    );
    await runInTransaction(t.app.get(DataSource), (tx) => t.app.get(OutboxWriter).write(tx, effects));
  }

  const statusOf = async (tenant: string, order: string) =>
    (await db.query<{ status: string }>('SELECT status FROM outbox WHERE operation_key = $1', [key(tenant, order)]))[0].status;

  const sent = () => erp.posts().map((r) => r.key);

  it('its entry is committed handed over and sent at the next turn, while no claim has room; a tenant already in line waits', async () => {
    erp.failAlways({ kind: 'hold' });
    const backlog = 2 * RELAY_BATCH_SIZE;
    for (let i = 0; i < backlog + 2; i++) await insertErpRow(db, `a${i}`, 'acme');
    const relay = t.app.get(OutboxRelay);
    // Two claimed rounds of acme's: one request held at the ERP (the only slot), the rest waiting,
    // as many as the destination's queue holds for one tenant alone, so a claim now has no room.
    const rounds = [relay.runOnce(), relay.runOnce()];
    await waitFor("acme's rounds", async () => (await db.query(`SELECT 1 FROM outbox WHERE status = 'delivering'`)).length === backlog);
    expect(await relay.runOnce()).toBe(0);

    await pay('bravo', 'b1');
    await pay('acme', 'a-late');
    const rows = await db.query<{ operation_key: string; status: string; locked_by: string | null }>(
      'SELECT operation_key, status, locked_by FROM outbox WHERE operation_key = ANY($1) ORDER BY operation_key',
      [[key('bravo', 'b1'), key('acme', 'a-late')]],
    );
    expect(rows).toEqual([
      { operation_key: key('acme', 'a-late'), status: 'pending', locked_by: null },
      { operation_key: key('bravo', 'b1'), status: 'delivering', locked_by: expect.stringMatching(new RegExp(`^${relay.relayId}:`)) },
    ]);

    // A newcomer joins with one entry at a time: of charlie's three in one transaction, one joins.
    await pay('charlie', 'c1', 'c2', 'c3');
    expect([await statusOf('charlie', 'c1'), await statusOf('charlie', 'c2'), await statusOf('charlie', 'c3')]).toEqual([
      'delivering',
      'pending',
      'pending',
    ]);

    await pay('bravo', 'b2');
    expect(await statusOf('bravo', 'b2')).toBe('pending');

    // One answer at a time: the slot goes to acme's next, then to bravo and charlie (their turns), not after acme's queue.
    for (let n = 1; n < 5; n++) {
      erp.release();
      await waitFor(`request ${n + 1}`, async () => sent().length === n + 1);
    }
    expect(sent().map((k) => k!.split(':')[2])).toEqual(['acme', 'acme', 'bravo', 'charlie', 'acme']);

    // Bravo's next entry, once b1 is sent, does not join ahead of b2, written pending while b1 waited.
    await pay('bravo', 'b3');
    expect(await statusOf('bravo', 'b3')).toBe('pending');

    erp.failAlways(undefined);
    erp.release();
    await Promise.all(rounds);
    while ((await relay.runOnce()) > 0);
    await waitFor('every entry delivered', async () => (await db.query(`SELECT 1 FROM outbox WHERE status <> 'delivered'`)).length === 0);
    expect(new Set(sent()).size).toBe(backlog + 9);
  });
});

/** A database, a fake ERP and an app sending to it with `env`, for the enclosing describe. */
function useErpApp(env: Record<string, string>, started: (s: { db: TestDatabase; erp: FakeDestination; t: TestApp }) => void): void {
  let db: TestDatabase | undefined;
  let erp: FakeDestination | undefined;
  let t: TestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    t = await startTestApp({ databaseUrl: db.url, env: { ERP_URL: erp.url, ...env } });
    started({ db, erp, t });
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await db?.drop();
  });
}
