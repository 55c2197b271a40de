import { Client } from 'pg';
import request from 'supertest';
import { WorkerLimits } from '../../src/inbox/worker-limits';
import { MetricsRegistry } from '../../src/observability/metrics.registry';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, TestAppOptions, useTestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { burst, ENDPOINTS, inboxRow, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

const LEASE_MS = 30_000;
const endpoint = (id: string, tenantId: string, limits?: object) => ({ ...ENDPOINTS[0], id, tenantId, ...(limits && { limits }) });

/** acme: two endpoints, the tenant limited to 5 at once; bravo unlimited; carol: one endpoint at 2 at once, one at 10 a second. */
const OPTIONS: Omit<TestAppOptions, 'databaseUrl'> = {
  endpoints: [
    endpoint('stripe-acme', 'acme'),
    endpoint('stripe-acme-2', 'acme'),
    endpoint('stripe-bravo', 'bravo'),
    endpoint('stripe-carol', 'carol', { concurrency: 2 }),
    endpoint('stripe-carol-rated', 'carol', { perSecond: 1, burst: 10 }),
    endpoint('stripe-carol-free', 'carol'),
  ],
  tenants: [{ id: 'acme', limits: { concurrency: 5 } }],
  env: { WORKER_LEASE_MS: String(LEASE_MS) },
};

async function connectTo(db: TestDatabase): Promise<Client> {
  const client = new Client({ connectionString: db.url });
  await client.connect();
  return client;
}

type Claimed = { tenantId: string; endpointId: string }[];
const count = (events: Claimed, key: (e: Claimed[number]) => string, value: string) => events.filter((e) => key(e) === value).length;
const ofTenant = (events: Claimed, tenant: string) => count(events, (e) => e.tenantId, tenant);
const ofEndpoint = (events: Claimed, id: string) => count(events, (e) => e.endpointId, id);

/**
 * Optional worker limits per tenant and per endpoint (issue 34): a limited key never has more
 * events processing than its concurrency, over every instance, nor starts more than its rate;
 * the rest of its tenant and every other tenant are served as before.
 */
describe('worker limits per tenant and endpoint', () => {
  let db: TestDatabase;
  let t: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ ...OPTIONS, databaseUrl: db.url });
    other = await startTestApp({ ...OPTIONS, databaseUrl: db.url });
  });
  afterAll(async () => {
    await t?.close();
    await other?.close();
    await db?.drop();
  });
  afterEach(async () => {
    await db.query(`DELETE FROM webhook_inbox`);
    await db.query(`UPDATE worker_limit_buckets SET tokens = 10, refilled_at = now()`);
  });

  const claim = (app: TestApp, limit = 64) =>
    app.app.get(WorkerLimits).claim(`test:${Math.random()}`, app.clock.now(), limit, LEASE_MS) as Promise<Claimed>;
  const settle = (tenant: string) =>
    db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE tenant_id = $1 AND status = 'processing'`, [tenant]);

  it("a tenant's concurrency holds across its endpoints and claims; other tenants are served in the same claim", async () => {
    await burst(db, 'acme', 100);
    await burst(db, 'acme', 100, 'acme2', 'stripe-acme-2');
    await burst(db, 'bravo', 20);

    const first = await claim(t);
    expect(ofTenant(first, 'acme')).toBe(5);
    expect(ofTenant(first, 'bravo')).toBe(20);
    // Its five places are taken: nothing more of acme until one frees.
    expect(ofTenant(await claim(t), 'acme')).toBe(0);
    await settle('acme');
    expect(ofTenant(await claim(t), 'acme')).toBe(5);
  });

  it('two instances claiming at once never take more than the limit between them', async () => {
    await burst(db, 'acme', 200);
    const claims = await Promise.all([t, other, t, other, t, other, t, other].map((app) => claim(app)));
    expect(claims.reduce((n, c) => n + ofTenant(c, 'acme'), 0)).toBe(5);
    const [{ processing }] = await db.query(`SELECT count(*)::int AS processing FROM webhook_inbox WHERE status = 'processing'`);
    expect(processing).toBe(5);
  });

  it("an endpoint's limits hold back only that endpoint: its tenant's other endpoint goes on", async () => {
    await burst(db, 'carol', 20, 'c1', 'stripe-carol');
    await burst(db, 'carol', 20, 'c2', 'stripe-carol-rated');
    await burst(db, 'carol', 20, 'c3', 'stripe-carol-free');

    const first = await claim(t);
    expect(ofEndpoint(first, 'stripe-carol')).toBe(2);
    expect(ofEndpoint(first, 'stripe-carol-rated')).toBe(10); // the burst
    expect(ofEndpoint(first, 'stripe-carol-free')).toBe(20);

    // The rate's tokens are spent; two seconds later two more may start. The concurrency's places are still taken.
    const second = await claim(other);
    expect(ofEndpoint(second, 'stripe-carol-rated')).toBe(0);
    expect(ofEndpoint(second, 'stripe-carol')).toBe(0);
    await db.query(
      `UPDATE worker_limit_buckets SET refilled_at = refilled_at - interval '2 seconds' WHERE key = 'endpoint:stripe-carol-rated'`,
    );
    expect(ofEndpoint(await claim(t), 'stripe-carol-rated')).toBe(2);
  });

  it("a bucket row deleted (by hand, or by an older build's start) is made again, full, and its limit still holds", async () => {
    await burst(db, 'carol', 20, 'c2', 'stripe-carol-rated');
    await db.query(`DELETE FROM worker_limit_buckets WHERE key = 'endpoint:stripe-carol-rated'`);
    expect(ofEndpoint(await claim(t), 'stripe-carol-rated')).toBe(10);
    expect(ofEndpoint(await claim(other), 'stripe-carol-rated')).toBe(0);
  });

  it('a claim that cannot have the buckets within 2 s (an instance stalled holding them) takes nothing and comes back soon', async () => {
    await burst(db, 'bravo', 3);
    const stalled = await connectTo(db);
    try {
      await stalled.query('BEGIN');
      await stalled.query(`SELECT * FROM worker_limit_buckets FOR UPDATE`);
      expect(await claim(t)).toEqual([]);
      expect(t.app.get(WorkerLimits).wakeInMs).toBe(100);
    } finally {
      await stalled.query('ROLLBACK');
      await stalled.end();
    }
    expect(ofTenant(await claim(t), 'bravo')).toBe(3);
  });

  it('/admin/stats and /metrics show each limit, its events in flight, due and tokens', async () => {
    await burst(db, 'acme', 30);
    await claim(t);
    const stats = await request(t.url)
      .get('/admin/stats')
      .set({ Authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(stats.status).toBe(200);
    expect(stats.body.workerLimits).toEqual(
      expect.arrayContaining([
        { kind: 'tenant', name: 'acme', tenantId: 'acme', concurrency: 5, inFlight: 5, due: 25 },
        { kind: 'endpoint', name: 'stripe-carol', tenantId: 'carol', concurrency: 2, inFlight: 0, due: 0 },
        expect.objectContaining({ kind: 'endpoint', name: 'stripe-carol-rated', perSecond: 1, burst: 10, inFlight: 0, due: 0 }),
      ]),
    );
    expect(stats.body.workerLimits).toHaveLength(3);

    const metrics = await t.app.get(MetricsRegistry).metrics();
    expect(metrics).toContain('webhook_worker_limit_in_flight{kind="tenant",name="acme"} 5');
    expect(metrics).toContain('webhook_worker_limit_due{kind="tenant",name="acme"} 25');
    expect(metrics).toContain('webhook_worker_limit_concurrency{kind="endpoint",name="stripe-carol"} 2');
    expect(metrics).toMatch(/webhook_worker_limit_tokens\{kind="endpoint",name="stripe-carol-rated"\} 10/);
  });
});

describe('worker limits: an accepted event of a limited tenant is not handed over past its limit', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [endpoint('stripe-acme', 'acme'), endpoint('stripe-bravo', 'bravo')],
      tenants: [{ id: 'acme', limits: { concurrency: 1 } }],
      env: { ROLES: 'api,worker', WORKER_LEASE_MS: String(LEASE_MS), WORKER_POLL_MS: '200' },
    },
    (started) => ({ t, db } = started),
  );

  /** Its order does not exist: the worker's attempt leaves it pending for a retry, with an attempt counted. */
  const attempted = async (event: Record<string, unknown>) => (await inboxRow(db, event.id as string)).attempts > 0;

  it('waits while its one place is held on another instance, and is processed once the place frees', async () => {
    // An event of unlimited bravo first: the worker hands events over once a batch has shown it is quick.
    const warm = paymentIntentEvent('payment_intent.succeeded', { orderId: 'w1' });
    await postStripe(t, warm, 'stripe-bravo');
    await waitFor('the first event to be attempted', () => attempted(warm));

    // acme's one place, held by another instance's long lease.
    await burst(db, 'acme', 1, 'held');
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', locked_by = 'elsewhere', locked_until = now() + interval '1 hour' WHERE event_id = 'held_1'`,
    );
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'a1' });
    await postStripe(t, event);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'pending', attempts: 0, locked_by: null });

    await db.query(
      `UPDATE webhook_inbox SET status = 'done', locked_by = NULL, locked_until = NULL, completed_at = now() WHERE event_id = 'held_1'`,
    );
    await waitFor('the event to be attempted', () => attempted(event));
  });
});

describe('worker limits: the worker comes back for a limited key without waiting for its poll', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [endpoint('stripe-acme', 'acme'), endpoint('stripe-bravo', 'bravo', { perSecond: 4, burst: 1 })],
      tenants: [{ id: 'acme', limits: { concurrency: 1 } }],
      // No poll in the test's time: only the worker's own wake-ups claim.
      env: { ROLES: 'api,worker', WORKER_LEASE_MS: String(LEASE_MS), WORKER_POLL_MS: '600000' },
    },
    (started) => ({ t, db } = started),
  );

  const attempted = async (tenant: string) =>
    (await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE tenant_id = $1 AND attempts > 0`, [tenant]))[0].n;

  it('one at a time: each settled event lets the next be claimed; at 4 a second: each token brings the next', async () => {
    // Their orders do not exist: each attempt leaves the event pending for a retry a while later, with its attempt counted.
    await burst(db, 'acme', 5);
    await burst(db, 'bravo', 3);
    worker(t).wake();
    await waitFor(
      'every event of acme and bravo to be attempted once',
      async () => (await attempted('acme')) === 5 && (await attempted('bravo')) === 3,
      5_000,
    );
  });
});
