import { ReconciliationScheduler } from '../../src/reconciliation/reconciliation.scheduler';
import { FakeStripeApi } from '../support/fake-stripe-api';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { STRIPE_SECRET, TENANT } from '../inbox/worker-fixtures';

const API_KEY = 'sk_test_malformed_0123456789SECRETKEY';

/**
 * A Stripe list page whose last event has no usable `id` (a malformed answer) while `has_more` is
 * true: the run asked again without `starting_after` and listed the first page for ever, its lease
 * renewed on every page, the instance's reconciliation (one run at a time) stuck behind it.
 */
describe('reconciliation: a malformed Stripe page', () => {
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
          eventTypes: ['payment_intent.succeeded'],
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
    fake.list = () => ({ object: 'list', url: '/v1/events', has_more: !stop, data: stop ? [] : [good, bad] });
    const run = t.app.get(ReconciliationScheduler).runOnce();
    const outcome = await Promise.race([run.then(() => 'finished'), new Promise((r) => setTimeout(() => r('still running'), 8000))]);
    const calls = stripe.callsTo('/v1/events');
    const [row] = await db.query(`SELECT status, listed, api_calls FROM reconciliation_runs ORDER BY id DESC LIMIT 1`);
    stop = true;
    await run.catch(() => undefined);
    fake.list = original;
    expect(outcome).toBe('finished');
    expect(calls).toHaveLength(1);
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
