import request from 'supertest';
import { ReconciliationScheduler } from '../../src/reconciliation/reconciliation.scheduler';
import { FakeStripeApi, StripeEventObject } from '../support/fake-stripe-api';
import { startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { STRIPE_SECRET, TENANT } from '../inbox/worker-fixtures';

const API_KEY = 'sk_test_outcomes_0123456789SECRETKEY';

let seq = 0;
function event(fields: Partial<StripeEventObject> = {}): StripeEventObject {
  return {
    id: `evt_out_${Date.now().toString(36)}_${seq++}`,
    object: 'event',
    api_version: '2026-10-28',
    created: Math.floor(Date.now() / 1000) - 600,
    livemode: false,
    type: 'payment_intent.succeeded',
    pending_webhooks: 1,
    data: {
      object: {
        id: `pi_out${seq}`,
        object: 'payment_intent',
        amount: 100,
        currency: 'eur',
        status: 'succeeded',
        metadata: { order_id: `out${seq}` },
      },
    },
    ...fields,
  };
}

describe('reconciliation: what happened to each event it brought in, in its own counts', () => {
  let db: TestDatabase;
  let stripe: FakeStripeApi;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    stripe = await new FakeStripeApi(API_KEY).start();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        {
          id: 'stripe-acme',
          provider: 'stripe',
          tenantId: TENANT,
          secrets: [{ label: 'current', value: STRIPE_SECRET }],
          // Live-mode events are signed but not this endpoint's: ignored as unexpected_source.
          expect: { livemode: false },
          api: { env: 'STRIPE_API_KEY_ACME', baseUrl: stripe.url, reconcile: { enabled: true, intervalSeconds: 60, lookbackHours: 72 } },
        },
      ],
      env: { STRIPE_API_KEY_ACME: API_KEY },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stripe?.stop();
    await db?.drop();
  });

  it('1 accepted, 3 ignored, 1 duplicate, 1 unstorable: the run, its answer and its metrics say so; no webhook counted', async () => {
    stripe.addEvent(event());
    for (let i = 0; i < 3; i++) stripe.addEvent(event({ livemode: true }));
    // Listed twice in one page: both copies are missing when looked up, one wins the insert.
    const twice = stripe.addEvent(event());
    stripe.addEvent(twice);
    stripe.addEvent(event({ data: { object: { id: 'pi_nul', object: 'payment_intent', description: 'a\u0000b' } } }));

    expect(await t.app.get(ReconciliationScheduler).runOnce()).toBe(1);

    const [run] = await db.query(`SELECT * FROM reconciliation_runs ORDER BY id DESC LIMIT 1`);
    expect(run).toMatchObject({ status: 'succeeded', listed: 7, found_missing: 7, accepted: 2 });
    expect(run.outcomes).toEqual({ duplicate: 1, 'ignored:unexpected_source': 3, 'invalid:unsupported_json': 1 });
    expect(await db.query(`SELECT status, count(*)::int AS n FROM webhook_inbox GROUP BY status ORDER BY status`)).toEqual([
      { status: 'ignored', n: 3 },
      { status: 'pending', n: 2 },
    ]);

    const overview = await request(t.url).get('/admin/reconciliation').set('Authorization', `Bearer ${VIEWER_TOKEN}`);
    expect(overview.body.endpoints[0].lastRun).toMatchObject({
      foundMissing: 7,
      accepted: 2,
      duplicates: 1,
      ignored: 3,
      invalid: 1,
      byReason: { unexpected_source: 3, unsupported_json: 1 },
    });

    const metrics = (await request(t.url).get('/metrics')).text;
    expect(metrics).not.toMatch(/^webhook_requests_total\{endpoint="stripe-acme"/m);
    expect(metrics).not.toMatch(/^webhook_digest_conflicts_total\{endpoint="stripe-acme"/m);
    expect(metrics).toMatch(/^reconciled_events_total\{endpoint="stripe-acme",outcome="accepted",reason=""\} 2$/m);
    expect(metrics).toMatch(/^reconciled_events_total\{endpoint="stripe-acme",outcome="ignored",reason="unexpected_source"\} 3$/m);
    expect(metrics).toMatch(/^reconciled_events_total\{endpoint="stripe-acme",outcome="duplicate",reason=""\} 1$/m);
    expect(metrics).toMatch(/^reconciled_events_total\{endpoint="stripe-acme",outcome="invalid",reason="unsupported_json"\} 1$/m);
  });

  it('takes the page, then fails the run (malformed_answer) instead of listing it again for ever', async () => {
    const fake = stripe as unknown as { list: (q: URLSearchParams, account?: string) => unknown };
    const original = fake.list.bind(stripe);
    const now = Math.floor(Date.now() / 1000);
    const good = {
      id: 'evt_malformed_good',
      object: 'event',
      created: now - 60,
      livemode: false,
      type: 'payment_intent.succeeded',
      data: { object: { id: 'pi_x', object: 'payment_intent', amount: 1, currency: 'eur', metadata: { order_id: 'x' } } },
    };
    const bad = { ...good, id: undefined, created: now - 120 };
    let stop = false;
    t.clock.advance(61_000);
    const callsBefore = stripe.callsTo('/v1/events').length;
    // Stripe never answers so: a page whose last event has no id while it says there is more.
    fake.list = () => ({ object: 'list', url: '/v1/events', has_more: !stop, data: stop ? [] : [good, bad] });
    const run = t.app.get(ReconciliationScheduler).runOnce();
    const outcome = await Promise.race([run.then(() => 'finished'), new Promise((r) => setTimeout(() => r('still running'), 8000))]);
    const calls = stripe.callsTo('/v1/events').length - callsBefore;
    const [row] = await db.query(`SELECT status, listed, api_calls FROM reconciliation_runs ORDER BY id DESC LIMIT 1`);
    stop = true;
    await run.catch(() => undefined);
    fake.list = original;
    expect(outcome).toBe('finished');
    expect(calls).toBe(1);
    expect(row).toMatchObject({ status: 'failed', listed: 2, api_calls: 1 });
    expect(await db.query(`SELECT error FROM reconciliation_runs ORDER BY id DESC LIMIT 1`)).toEqual([{ error: 'malformed_answer' }]);
  });

  it('counts an event listed without an id in the run (invalid), not only in the metrics', async () => {
    const fake = stripe as unknown as { list: (q: URLSearchParams, account?: string) => unknown };
    const original = fake.list.bind(stripe);
    const now = Math.floor(Date.now() / 1000);
    const event = (id: string | undefined, ago: number) => ({
      id,
      object: 'event',
      created: now - ago,
      livemode: false,
      type: 'payment_intent.succeeded',
      data: { object: { id: 'pi_y', object: 'payment_intent', amount: 1, currency: 'eur', metadata: { order_id: 'y' } } },
    });
    fake.list = () => ({ object: 'list', url: '/v1/events', has_more: false, data: [event('evt_malformed_a', 30), event(undefined, 40)] });
    try {
      t.clock.advance(61_000);
      await t.app.get(ReconciliationScheduler).runOnce();
    } finally {
      fake.list = original;
    }
    const [row] = await db.query(
      `SELECT status, listed, found_missing, accepted, outcomes FROM reconciliation_runs ORDER BY id DESC LIMIT 1`,
    );
    expect(row).toMatchObject({ listed: 2, found_missing: 2, accepted: 1 });
    // The run's record must account for every listed event: present, accepted, duplicate, ignored or invalid.
    const invalid = Object.entries(row.outcomes ?? {})
      .filter(([k]) => k.startsWith('invalid'))
      .reduce((n, [, v]) => n + Number(v), 0);
    expect(invalid).toBe(1);
  });
});
