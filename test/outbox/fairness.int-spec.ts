import { DataSource } from 'typeorm';
import { runInTransaction } from '../../src/database/unit-of-work';
import { effectsOf } from '../../src/orders/order-effects';
import { OutboxRelay, RELAY_BATCH_SIZE } from '../../src/outbox/outbox-relay';
import { OutboxWriter } from '../../src/outbox/outbox-writer';
import { OutboxRepository } from '../../src/outbox/outbox.repository';
import { CLAIM_OUTBOX } from '../../src/outbox/outbox.queries';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { startTestApp, TestApp, useTestApp } from '../support/test-app';
import { createTestDatabase, planNodes, TestDatabase } from '../support/test-database';
import { insertErpRow, paidOrder } from './outbox-rows';
import { waitFor } from '../support/wait-for';

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

  it("a claim that passes a tenant over reads none of that tenant's rows", async () => {
    await db.query(`DELETE FROM outbox`);
    for (let i = 0; i < 100; i++) await insertErpRow(db, `a${i}`, 'acme');
    await insertErpRow(db, 'b1', 'bravo');
    await db.query('ANALYZE outbox');
    const literals = ['', 'now()', `'relay:3'`, '30000', `ARRAY['erp']`, 'ARRAY[2]', '64', '1000', `ARRAY['erp']`, `ARRAY['acme']`];
    const nodes = await planNodes(db, CLAIM_OUTBOX, literals);
    // Each tenant's due rows are read and locked by a LATERAL scan: only bravo's one row is, none of acme's 100.
    const locked = nodes.filter((n) => n['Node Type'] === 'LockRows').reduce((sum, n) => sum + n['Actual Loops'] * n['Actual Rows'], 0);
    expect(locked).toBe(1);
  });
});

describe('while tenants share a destination, the relay claims what it can start soon, so the next claim (and the next tenant) comes soon', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({ databaseUrl: db.url, env: { ERP_URL: erp.url, EMAIL_URL: email.sendUrl, DESTINATION_ERP_CONCURRENCY: '2' } });
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

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

  it("while one tenant fills the room, another tenant's entry written pending is claimed beside the rounds and starts at the next free slot", async () => {
    erp.failAlways({ kind: 'hold' });
    for (let i = 0; i < 200; i++) await insertErpRow(db, `a${i}`, 'acme');
    const relay = t.app.get(OutboxRelay);
    // acme alone: two rounds of a batch each, waiting on 2 requests held at the ERP, the rest queued; no room left.
    const rounds = [relay.runOnce(), relay.runOnce()];
    await waitFor('both rounds claimed', async () => (await db.query(`SELECT 1 FROM outbox WHERE status = 'delivering'`)).length === 128);
    await erp.waitForRequests(2);
    const bravo = [await insertErpRow(db, 'b0', 'bravo'), await insertErpRow(db, 'b1', 'bravo'), await insertErpRow(db, 'b2', 'bravo')];
    // Without the writer's word no claim is made beside the rounds; for acme's own entries neither.
    expect(relay.othersWaiting).toBe(false);
    relay.pendingWritten([{ tenantId: 'acme', destination: 'erp' }]);
    expect(relay.othersWaiting).toBe(false);
    // bravo's entries written pending: a claim beside the rounds takes a wave of them (2), passing acme over.
    relay.pendingWritten([{ tenantId: 'bravo', destination: 'erp' }]);
    expect(relay.othersWaiting).toBe(true);
    expect(await relay.claimForOthers()).toBe(2);
    // One wave past the room in all: bravo now holds a wave too, and charlie's word claims nothing more.
    await insertErpRow(db, 'c0', 'charlie');
    relay.pendingWritten([{ tenantId: 'charlie', destination: 'erp' }]);
    expect(await relay.claimForOthers()).toBe(0);
    // The next free slot is bravo's (tenants in turn), ahead of acme's 126 queued entries.
    erp.release();
    await erp.waitForRequests(4);
    expect(erp.requests.slice(2, 4).map((r) => r.key)).toContain(bravo[0]);
    erp.failAlways(undefined);
    erp.release();
    expect(await Promise.all(rounds)).toEqual([RELAY_BATCH_SIZE, RELAY_BATCH_SIZE]);
  });

  it("while one tenant's entries overfill the room, a claim beside the rounds still takes a wave for another tenant", async () => {
    const relay = t.app.get(OutboxRelay);
    // A round of acme's alone first: the relay knows acme is alone there, and gives a round a batch.
    await insertErpRow(db, 'a-alone', 'acme');
    expect(await relay.runOnce()).toBe(1);
    erp.failAlways({ kind: 'hold' });
    for (let i = 0; i < 250; i++) await insertErpRow(db, `a${i}`, 'acme');
    // Two rounds fill the room (128), and a transaction's 64 entries handed over while a slot was
    // free overfill it, as they do when a burst begins: 192 of acme's held, 2 sending.
    const rounds = [relay.runOnce(), relay.runOnce()];
    await waitFor('both rounds claimed', async () => (await db.query(`SELECT 1 FROM outbox WHERE status = 'delivering'`)).length === 128);
    const lease = 'test:handed-over';
    const until = new Date(t.clock.now().getTime() + 30_000);
    const { entries } = await t.app.get(OutboxRepository).claim(lease, t.clock.now(), 30_000, new Map([['erp', 64]]), 64);
    relay.handedOver({ lease, until, destinations: ['erp'], erasures: 0 }, entries);
    expect(entries).toHaveLength(64);
    await erp.waitForRequests(3); // a-alone's, and the 2 held
    const bravo = [await insertErpRow(db, 'b0', 'bravo'), await insertErpRow(db, 'b1', 'bravo'), await insertErpRow(db, 'b2', 'bravo')];
    await insertErpRow(db, 'c0', 'charlie');
    // Bravo's wave is claimed now, not once acme's queue has drained back into the room; a second
    // claim for the others in flight at once (charlie's word came meanwhile) finds that wave taken.
    relay.pendingWritten([{ tenantId: 'bravo', destination: 'erp' }]);
    const first = relay.claimForOthers();
    relay.pendingWritten([{ tenantId: 'charlie', destination: 'erp' }]);
    const second = relay.claimForOthers();
    expect((await first) + (await second)).toBe(2);
    // Held, it bounds what the next claim for the others may take.
    relay.pendingWritten([{ tenantId: 'charlie', destination: 'erp' }]);
    expect(await relay.claimForOthers()).toBe(0);
    // The two held requests answer: of the next two, one is bravo's (tenants in turn).
    const sent = erp.requests.length;
    erp.release();
    await erp.waitForRequests(sent + 2);
    expect(erp.requests.slice(sent, sent + 2).map((r) => r.key)).toContain(bravo[0]);
    erp.failAlways(undefined);
    erp.release();
    expect(await Promise.all(rounds)).toEqual([RELAY_BATCH_SIZE, RELAY_BATCH_SIZE]);
    await waitFor(
      'the handed-over entries delivered',
      async () => (await db.query(`SELECT 1 FROM outbox WHERE status = 'delivered'`)).length >= 195,
    );
  });

  it("while one tenant holds every slot, a caught-up tenant's entry this instance writes is committed claimed and starts at the next free slot, with no claim", async () => {
    const relay = t.app.get(OutboxRelay);
    relay.start(); // as its scheduler does: the writer's entries may be handed over
    // A round of acme's alone first: the relay knows acme is alone there, and gives a round a batch.
    await insertErpRow(db, 'a-alone', 'acme');
    expect(await relay.runOnce()).toBe(1);
    erp.failAlways({ kind: 'hold' });
    for (let i = 0; i < 200; i++) await insertErpRow(db, `a${i}`, 'acme');
    const before = erp.requests.length;
    const rounds = [relay.runOnce(), relay.runOnce()];
    await waitFor('both rounds claimed', async () => (await db.query(`SELECT 1 FROM outbox WHERE status = 'delivering'`)).length === 128);
    await erp.waitForRequests(before + 2); // the 2 held
    const write = (tenantId: string, orderId: string) =>
      runInTransaction(t.app.get(DataSource), (tx) =>
        t.app.get(OutboxWriter).write(
          tx,
          effectsOf({ ...paidOrder(orderId), tenantId }, 'paid', {
            paymentId: `pi_${orderId}`,
            occurredAt: '2026-12-01T10:00:00.000Z',
            sourceEventId: '1',
          }),
        ),
      );
    const status = async (key: string) =>
      (await db.query(`SELECT status, locked_by FROM outbox WHERE operation_key = $1`, [key]))[0] as {
        status: string;
        locked_by: string | null;
      };
    const claims = jest.spyOn(t.app.get(OutboxRepository), 'claim');
    try {
      await write('bravo', 'b-busy');
      await write('acme', 'a-busy');
      // Its e-mail, at a destination with a slot free, is sent and recorded in a round of its own,
      // not held with the ERP entry until a slot there frees.
      await waitFor('bravo e-mail delivered', async () => (await status('email:receipt:bravo:b-busy'))?.status === 'delivered');
      // Bravo has no request here: committed claimed by this relay. Acme's, behind its own, is written pending.
      expect(await status('erp:order-paid:bravo:b-busy')).toEqual({
        status: 'delivering',
        locked_by: expect.stringMatching(new RegExp(`^${relay.relayId}:`)),
      });
      expect((await status('erp:order-paid:acme:a-busy')).status).toBe('pending');
      // A tenant whose entries the writer left pending is not taken until a claim has taken every due one.
      relay.pendingWritten([{ tenantId: 'carol', destination: 'erp' }]);
      const takes = (tenant: string) => relay.handOver()?.takes?.('erp', tenant) ?? false;
      expect([takes('carol'), takes('dave'), takes('acme')]).toEqual([false, true, false]);
      // Bravo's request waits here now: its next entry would not pass it.
      await waitFor('bravo holding a request here', async () => !takes('bravo'));
      // The two held requests answer: of the next two, one is bravo's (tenants in turn), claimed by nobody.
      const sent = erp.requests.length;
      erp.release();
      await erp.waitForRequests(sent + 2);
      expect(erp.requests.slice(sent, sent + 2).map((r) => r.key)).toContain('erp:order-paid:bravo:b-busy');
      expect(claims).not.toHaveBeenCalled();
    } finally {
      claims.mockRestore();
      erp.failAlways(undefined);
      erp.release();
    }
    expect(await Promise.all(rounds)).toEqual([RELAY_BATCH_SIZE, RELAY_BATCH_SIZE]);
    await waitFor('bravo delivered', async () => (await status('erp:order-paid:bravo:b-busy')).status === 'delivered');
  });
});
