import request from 'supertest';
import { UnitOfWork } from '../../src/database/unit-of-work';
import { compareIds, InboxRepository } from '../../src/inbox/inbox.repository';
import { WorkerFaults } from '../../src/inbox/worker-faults';
import { OrdersService } from '../../src/orders/orders.service';
import { OPERATOR_TOKEN, TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { burst, ENDPOINTS, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

const TENANTS = ['acme', 'bravo', 'carol'];
const LEASE_MS = 30_000;
/** Slow enough that the test's own steps finish long before a bulk replay's second batch falls due. */
const REPLAY_PACE = 100;

describe('fairness: each claim serves the tenants with due work in turn (issue 34)', () => {
  let t: TestApp;
  let db: TestDatabase;
  useTestApp(
    {
      endpoints: [...ENDPOINTS, ...TENANTS.slice(1).map((tenantId) => ({ ...ENDPOINTS[0], id: `stripe-${tenantId}`, tenantId }))],
      env: { WORKER_LEASE_MS: String(LEASE_MS), BULK_REPLAY_PER_SECOND: String(REPLAY_PACE) },
    },
    (started) => ({ t, db } = started),
  );
  afterEach(() => db.query(`DELETE FROM webhook_inbox`));

  const claim = (limit: number) => t.app.get(InboxRepository).claim(`test:${Math.random()}`, t.clock.now(), limit, LEASE_MS);
  const ids = async (tenant: string) =>
    (await db.query(`SELECT id FROM webhook_inbox WHERE tenant_id = $1 ORDER BY id`, [tenant])).map((r: { id: string }) => String(r.id));

  it("a tenant's few events are in the next claim behind another tenant's burst, each tenant's own in arrival order", async () => {
    await burst(db, 'acme', 300);
    await burst(db, 'bravo', 3);
    const acme = await ids('acme');

    const first = await claim(64);
    const byTenant = (events: { tenantId: string; id: string }[], tenant: string) =>
      events.filter((e) => e.tenantId === tenant).map((e) => e.id);
    expect(byTenant(first, 'bravo')).toEqual(await ids('bravo'));
    // FIFO within the tenant: the oldest of the burst, none skipped.
    expect(byTenant(first, 'acme')).toEqual(acme.slice(0, 61));
    // In turns: every tenant's first events come first (the worker's first batch starts them).
    expect(
      first
        .slice(0, 2)
        .map((e) => e.tenantId)
        .sort(),
    ).toEqual(['acme', 'bravo']);

    const second = await claim(64);
    expect(byTenant(second, 'acme')).toEqual(acme.slice(61, 125));
  });

  it('three tenants share a claim evenly; a tenant alone fills it', async () => {
    await burst(db, 'acme', 300);
    await burst(db, 'bravo', 100);
    await burst(db, 'carol', 1);
    const shares = Object.fromEntries(TENANTS.map((tenant) => [tenant, 0]));
    for (const event of await claim(64)) shares[event.tenantId]++;
    expect(shares.carol).toBe(1);
    expect(Math.abs(shares.acme - shares.bravo)).toBeLessThanOrEqual(1);
    expect(shares.acme + shares.bravo).toBe(63);

    await db.query(`DELETE FROM webhook_inbox WHERE tenant_id <> 'acme'`);
    expect(await claim(64)).toHaveLength(64);
  });

  it("one instance's worker applies another tenant's payments in its first claim behind a burst", async () => {
    // More than a claim (CLAIM_BATCH) of acme's events, due first; bravo's two payments after them.
    await burst(db, 'acme', 700);
    const orders = t.app.get(OrdersService);
    for (const id of ['bp1', 'bp2'])
      await orders.create({ tenantId: 'bravo', id, totalMinor: 1000, currency: 'eur', customerEmail: `${id}@example.com` });
    await burst(db, 'bravo', 2, 'bp');

    await worker(t).runOnce();
    const paid = await db.query(`SELECT id FROM orders WHERE tenant_id = 'bravo' AND status = 'paid' ORDER BY id`);
    expect(paid.map((o: { id: string }) => o.id)).toEqual(['bp1', 'bp2']);
    // The claim took its share of acme's burst, no more (acme's events name no order: each is retried later).
    const [{ untouched }] = await db.query(
      `SELECT count(*)::int AS untouched FROM webhook_inbox WHERE tenant_id = 'acme' AND attempts = 0 AND status = 'pending'`,
    );
    expect(untouched).toBe(700 - 510);
  });

  it("a bulk replay falls due at BULK_REPLAY_PER_SECOND, an event at a time: the same tenant's live event is claimed before the replay's later events", async () => {
    await burst(db, 'acme', 1200);
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined', completed_at = now()`);
    const replay = await request(t.url)
      .post('/admin/inbox/replay')
      .set({ Authorization: `Bearer ${OPERATOR_TOKEN}` })
      .send({ filter: { tenant: 'acme', status: 'quarantined' }, reason: 'mapping fixed', dryRun: false });
    expect(replay.body).toMatchObject({ count: 1200, batches: 3 });
    await burst(db, 'acme', 1, 'live');

    // In id order, each due 1/REPLAY_PACE s after the one before, across the batches of 500 too.
    const due = await db.query(
      `SELECT round(extract(epoch FROM next_attempt_at - min(next_attempt_at) OVER ()) * 1000)::int AS after_ms
         FROM webhook_inbox WHERE event_id LIKE 'acme\_%' ORDER BY id`,
    );
    expect(due).toHaveLength(1200);
    const step = 1000 / REPLAY_PACE;
    expect(due.map((d: { after_ms: number }, i: number) => Math.abs(d.after_ms - i * step) <= 1)).not.toContain(false);

    // Claimed now: the replay's first events and the live event after them, none of the later ones.
    const claimed = await claim(1000);
    const replayed = claimed.filter((e) => e.eventId !== 'live_1');
    expect(claimed.filter((e) => e.eventId === 'live_1')).toHaveLength(1);
    expect(replayed.length).toBeGreaterThan(0);
    expect(replayed.length).toBeLessThan(200);
    expect(replayed.map((e) => e.id).sort(compareIds)).toEqual((await ids('acme')).slice(0, replayed.length));
  });
});

describe("fairness: a tenant's events claimed behind another tenant's queued backlog start ahead of it (issue 34)", () => {
  const LEASE = 16_000;
  let t: TestApp;
  let db: TestDatabase;
  useTestApp(
    { endpoints: [...ENDPOINTS, { ...ENDPOINTS[0], id: 'stripe-bravo', tenantId: 'bravo' }], env: { WORKER_LEASE_MS: String(LEASE) } },
    (started) => ({ t, db } = started),
  );

  const status = async (eventId: string) => (await db.query(`SELECT status FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0]?.status;

  /**
   * Acme's backlog of 2,000 payments (orders `${prefix}0..`), each of its transactions held until
   * the test ends one; `test` runs once every lane (8 with this pool) holds a batch of 64 and 8
   * more are queued behind them, after a quick batch of bravo's (a payment of its order
   * `bravo${warmUp}1`). Bravo's events are payments of its orders bravo0..bravo2000.
   */
  async function besideHeldBacklog(
    prefix: string,
    warmUp: number,
    test: (endOneAcmeBatch: () => void, held: () => number) => Promise<void>,
  ) {
    await db.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email)
       SELECT tenant, prefix || g, 'awaiting_payment', 1000, 'eur', prefix || g || '@example.com'
         FROM unnest(ARRAY['acme', 'bravo'], ARRAY[$1, 'bravo']) o(tenant, prefix), generate_series(0, 2000) g
       ON CONFLICT DO NOTHING`,
      [prefix],
    );
    // A quick batch first: the worker then claims a batch ahead for every lane.
    await burst(db, 'bravo', 1, `bravo${warmUp}`);
    await worker(t).drain();
    const waiting: (() => void)[] = [];
    const held = new WeakSet<UnitOfWork>();
    t.app.get(WorkerFaults).beforeComplete = async (event, tx) => {
      if (event.tenantId !== 'acme' || held.has(tx)) return;
      held.add(tx);
      await new Promise<void>((r) => waiting.push(r));
    };
    try {
      await burst(db, 'acme', 2000, prefix);
      worker(t).wake();
      await waitFor('every lane busy and a batch queued for each', async () => {
        const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE tenant_id = 'acme' AND status = 'processing'`);
        return waiting.length === 8 && n === 16 * 64;
      });
      await test(
        () => waiting.shift()!(),
        () => waiting.length,
      );
    } finally {
      t.app.get(WorkerFaults).beforeComplete = async () => undefined;
      const release = setInterval(() => waiting.splice(0).forEach((r) => r()), 5);
      await worker(t).drain();
      clearInterval(release);
    }
  }

  it('each runs at the next free lane once claimed, in a batch of its own, not behind the batches queued before it', async () => {
    await besideHeldBacklog('acme', 3, async (endOneAcmeBatch) => {
      // bravo1's claim is full (512, acme has more due); bravo2's takes acme's last 465: a short one.
      for (const eventId of ['bravo1_1', 'bravo2_1']) {
        await burst(db, 'bravo', 1, eventId.slice(0, -2));
        worker(t).wake();
        // Acme's batches end one at a time until a claim (when fewer than 8 are queued) takes bravo's event in its turn.
        for (let ended = 0; (await status(eventId)) === 'pending'; ended++) {
          expect(ended).toBeLessThan(16);
          endOneAcmeBatch();
          await new Promise((r) => setTimeout(r, 50));
        }
        // One more of acme's batches ends, no other: the lane it frees starts bravo's event, ahead of
        // the batches of acme's queued before it.
        endOneAcmeBatch();
        await waitFor(`${eventId} done`, async () => (await status(eventId)) === 'done', 5_000);
      }
    });
  });

  it('a queued batch that has waited an eighth of a lease is passed no more: it still ends inside its lease', async () => {
    await besideHeldBacklog('acmeb', 5, async (endOneAcmeBatch, held) => {
      await new Promise((r) => setTimeout(r, LEASE / 8 + 100));
      await burst(db, 'bravo', 1, 'bravo9');
      worker(t).wake();
      endOneAcmeBatch();
      await waitFor('bravo9_1 claimed', async () => (await status('bravo9_1')) !== 'pending', 5_000);
      // The lane the next batch frees takes acme's oldest queued batch, not bravo's.
      endOneAcmeBatch();
      await waitFor("the freed lane held by acme's next batch", async () => held() === 8, 5_000);
      expect(await status('bravo9_1')).toBe('processing');
    });
  });

  it("with every lane busy, a caught-up tenant's accepted event is committed claimed for the worker and runs at the next free lane; never one behind its own", async () => {
    await besideHeldBacklog('acmec', 6, async (endOneAcmeBatch) => {
      worker(t).start(); // as its scheduler does: the worker takes this instance's accepted events
      const post = async (orderId: string, endpoint: string) => {
        const event = paymentIntentEvent('payment_intent.succeeded', { orderId });
        await postStripe(t, event, endpoint);
        return event.id as string;
      };
      // Bravo has nothing here and was not behind in the last claim: committed claimed, no claim needed.
      const first = await post('bravo77', 'stripe-bravo');
      expect(await status(first)).toBe('processing');
      // Its second waits behind its first (queued here), pending; acme's live event too (acme is behind).
      const second = await post('bravo78', 'stripe-bravo');
      expect(await status(second)).toBe('pending');
      expect(await status(await post('acmec0', 'stripe-acme'))).toBe('pending');
      // The next free lane runs the first, ahead of acme's queued batches.
      endOneAcmeBatch();
      await waitFor('the first payment applied', async () => (await status(first)) === 'done', 5_000);
      // A tenant an insert left pending is not taken at an insert (past its pending event) until a
      // claim that started after it has caught it up.
      worker(t).leftPending(['carol']);
      const takes = (tenant: string) => worker(t).insertClaim()?.takes(tenant, `stripe-${tenant}`) ?? false;
      expect([takes('carol'), takes('dave'), takes('acme')]).toEqual([false, true, false]);
      // acme's batches end one at a time: a claim takes bravo's second, and one started after the word catches carol up.
      for (let ended = 0; (await status(second)) === 'pending' || !takes('carol'); ended++) {
        expect(ended).toBeLessThan(24);
        endOneAcmeBatch();
        await new Promise((r) => setTimeout(r, 50));
      }
      expect([takes('dave'), takes('acme')]).toEqual([true, false]);
      endOneAcmeBatch();
      await waitFor('the second payment applied', async () => (await status(second)) === 'done', 5_000);
    });
  });
});

describe('fairness: a paced bulk replay is claimed as its events fall due, not at the next poll (issue 34)', () => {
  let t: TestApp;
  let db: TestDatabase;
  // No poll within the test: only the worker's own follow-up claims take the events that fall due later.
  useTestApp({ endpoints: ENDPOINTS, env: { WORKER_POLL_MS: '600000', BULK_REPLAY_PER_SECOND: '20' } }, (started) => ({ t, db } = started));

  it('a claim that found work is followed by another within 100 ms: the replay is taken a few events at a time', async () => {
    await db.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email)
       SELECT 'acme', 'paced' || g, 'awaiting_payment', 1000, 'eur', 'paced' || g || '@example.com' FROM generate_series(1, 60) g`,
    );
    await burst(db, 'acme', 60, 'paced');
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined', completed_at = now()`);
    const replay = await request(t.url)
      .post('/admin/inbox/replay')
      .set({ Authorization: `Bearer ${OPERATOR_TOKEN}` })
      .send({ filter: { tenant: 'acme', status: 'quarantined' }, reason: 'paced', dryRun: false });
    expect(replay.body).toMatchObject({ count: 60 });
    worker(t).start(); // as its scheduler does
    worker(t).wake();
    // Due over 3 s; one wake-up, then follow-ups only.
    await waitFor(
      'every replayed event applied',
      async () => (await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE status = 'done'`))[0].n === 60,
      15_000,
    );
    const [{ claims }] = await db.query(`SELECT count(DISTINCT lease)::int AS claims FROM webhook_inbox_attempts`);
    expect(claims).toBeGreaterThanOrEqual(4);
  });
});
