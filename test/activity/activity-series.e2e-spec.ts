import request from 'supertest';
import { ActivityService, ROLLUP_KEEP_MS } from '../../src/activity/activity.service';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';

const ACME_TOKEN = 'acme-operator-token-0123456789';
const MINUTE = 60_000;

interface Point {
  at: string;
  counts: Record<string, number>;
  backlog: number | null;
  oldestPendingAgeSeconds: number | null;
}

describe('GET /admin/series: activity per minute, rolled up by the maintenance role', () => {
  let db: TestDatabase;
  let t: TestApp;
  let activity: ActivityService;
  let now: number;
  let seq = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: ['acme', 'globex'].map((tenant) => ({
        id: `stripe-${tenant}`,
        provider: 'stripe',
        tenantId: tenant,
        secrets: [{ label: 'current', value: 'whsec_series_test_secret' }],
      })),
      env: { ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN},acme-ops:operator@acme:${ACME_TOKEN}` },
    });
    activity = t.app.get(ActivityService);
    now = Math.floor(t.clock.now().getTime() / MINUTE) * MINUTE;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function inboxRow(tenant: string, endpoint: string, receivedAt: number, status = 'done'): Promise<string> {
    seq += 1;
    const [row] = await db.query(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload_sha256, verified_with, status, received_at)
       VALUES ($1, $2, $3, 'stripe', $1, 'payment_intent.succeeded', repeat('0', 64), 'current', $4, $5) RETURNING id`,
      [endpoint, `evt_${seq}`, tenant, status, new Date(receivedAt)],
    );
    return row.id;
  }
  async function inboxAttempt(id: string, outcome: string, at: number): Promise<void> {
    await db.query(`INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome) VALUES ($1, 1, $2, 'l', $3)`, [
      id,
      new Date(at),
      outcome,
    ]);
  }
  async function outboxEntry(tenant: string, destination: string, createdAt: number, status = 'delivered'): Promise<string> {
    seq += 1;
    const [row] = await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, created_at)
       VALUES ($1, $2, 'order_paid', $3, '{}', $4, $5) RETURNING id`,
      [`op-${seq}`, destination, tenant, status, new Date(createdAt)],
    );
    return row.id;
  }
  async function deliveryAttempt(id: string, outcome: string, at: number): Promise<void> {
    await db.query(`INSERT INTO outbox_attempts (outbox_id, attempt, at, lease, outcome) VALUES ($1, 1, $2, 'l', $3)`, [
      id,
      new Date(at),
      outcome,
    ]);
  }
  async function series(token: string, query: Record<string, string>): Promise<request.Response> {
    return request(t.url).get('/admin/series').query(query).set('authorization', `Bearer ${token}`);
  }
  function at(points: Point[], ms: number): Point {
    const p = points.find((x) => new Date(x.at).getTime() === ms);
    if (!p) throw new Error(`no bucket at ${new Date(ms).toISOString()}`);
    return p;
  }

  it('counts each minute per endpoint and destination, of the tenants the token may see, and the backlog now', async () => {
    const m20 = now - 20 * MINUTE;
    const a1 = await inboxRow('acme', 'stripe-acme', m20 + 1_000);
    const a2 = await inboxRow('acme', 'stripe-acme', m20 + 2_000, 'quarantined');
    const g1 = await inboxRow('globex', 'stripe-globex', m20 + 3_000);
    await inboxAttempt(a1, 'done', m20 + 5_000);
    await inboxAttempt(a2, 'retry', m20 + 5_000);
    await inboxAttempt(a2, 'quarantined', now - 19 * MINUTE + 1_000);
    await inboxAttempt(g1, 'done', m20 + 6_000);
    // Open work now: two pending acme rows, the older accepted 5 minutes ago.
    await inboxRow('acme', 'stripe-acme', now - 5 * MINUTE + 1_000, 'pending');
    await inboxRow('acme', 'stripe-acme', now - 3 * MINUTE, 'pending');
    const o1 = await outboxEntry('acme', 'erp', m20);
    const o2 = await outboxEntry('globex', 'erp', m20, 'pending');
    await deliveryAttempt(o1, 'retry', m20 + 10_000);
    await deliveryAttempt(o1, 'delivered', m20 + 40_000);
    await deliveryAttempt(o2, 'retry', m20 + 50_000);

    const round = await activity.runOnce();
    expect(round).toEqual({ capped: false, minutes: 60 });

    const all = await series(OPERATOR_TOKEN, { window: '1h' });
    expect(all.status).toBe(200);
    expect(all.body.stepSeconds).toBe(60);
    expect(all.body.inbox).toHaveLength(60);
    expect(at(all.body.inbox, m20).counts).toMatchObject({ accepted: 3, done: 2, quarantined: 0 });
    expect(at(all.body.inbox, m20 + MINUTE).counts).toMatchObject({ accepted: 0, done: 0, quarantined: 1 });
    expect(at(all.body.outbox, m20).counts).toMatchObject({ delivered: 1, failed: 2 });
    expect(all.body.endpoints).toEqual(['stripe-acme', 'stripe-globex']);
    expect(all.body.destinations).toEqual(['erp']);
    const current = at(all.body.inbox, now);
    expect(current.backlog).toBe(2);
    expect(current.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(299);
    expect(current.oldestPendingAgeSeconds).toBeLessThan(360);
    expect(at(all.body.outbox, now).backlog).toBe(1);

    const oneEndpoint = await series(OPERATOR_TOKEN, { window: '1h', endpoint: 'stripe-globex' });
    expect(at(oneEndpoint.body.inbox, m20).counts).toMatchObject({ accepted: 1, done: 1 });
    expect(at(oneEndpoint.body.inbox, now).backlog).toBeNull();

    // A token limited to acme: globex's events, deliveries and endpoint are not in its answer.
    const acme = await series(ACME_TOKEN, { window: '1h' });
    expect(acme.status).toBe(200);
    expect(at(acme.body.inbox, m20).counts).toMatchObject({ accepted: 2, done: 1 });
    expect(at(acme.body.outbox, m20).counts).toMatchObject({ delivered: 1, failed: 1 });
    expect(at(acme.body.outbox, now).backlog).toBeNull();
    expect(acme.body.endpoints).toEqual(['stripe-acme']);
    const globexAsAcme = await series(ACME_TOKEN, { window: '1h', endpoint: 'stripe-globex' });
    expect(globexAsAcme.body.inbox.every((p: Point) => p.counts.accepted === 0 && p.backlog === null)).toBe(true);

    // Coarser windows sum the same minutes into their buckets.
    const day = await series(VIEWER_TOKEN, { window: '24h' });
    expect(day.status).toBe(200);
    expect(day.body.inbox).toHaveLength(144);
    const sum = (points: Point[], k: string) => points.reduce((n, p) => n + p.counts[k], 0);
    expect([sum(day.body.inbox, 'accepted'), sum(day.body.inbox, 'done'), sum(day.body.inbox, 'quarantined')]).toEqual([5, 2, 1]);
    // The week reads the hourly rows, summed from the same minutes.
    const week = await series(VIEWER_TOKEN, { window: '7d', destination: 'erp' });
    expect(week.body.outbox).toHaveLength(168);
    expect(week.body.outbox.some((p: Point) => p.backlog === 1)).toBe(true);
    expect([sum(week.body.outbox, 'delivered'), sum(week.body.outbox, 'failed')]).toEqual([1, 2]);
  });

  it('counts a late attempt of a recent minute at the next round, and never twice', async () => {
    const m2 = Math.floor(t.clock.now().getTime() / MINUTE) * MINUTE - 2 * MINUTE;
    const before = at((await series(OPERATOR_TOKEN, { window: '1h' })).body.outbox, m2).counts.delivered;
    const o = await outboxEntry('acme', 'email', m2);
    await deliveryAttempt(o, 'delivered', m2 + 1_000);
    await activity.runOnce();
    await activity.runOnce();
    const after = (await series(OPERATOR_TOKEN, { window: '1h' })).body.outbox;
    expect(at(after, m2).counts.delivered).toBe(before + 1);
  });

  it('drops minutes older than the longest window', async () => {
    // More than an hour past the cutoff, so that its hour too is wholly older (an hour row stays while any of its minutes may).
    const old = new Date(now - ROLLUP_KEEP_MS - 70 * MINUTE);
    await db.query(
      `INSERT INTO activity_minutes (minute, kind, scope, tenant_id, accepted) VALUES ($1, 'endpoint', 'stripe-acme', 'acme', 5)`,
      [old],
    );
    await db.query(
      `INSERT INTO activity_hours (minute, kind, scope, tenant_id, accepted) VALUES (date_trunc('hour', $1::timestamptz), 'endpoint', 'stripe-acme', 'acme', 5)`,
      [old],
    );
    await activity.runOnce();
    expect(await db.query(`SELECT 1 FROM activity_minutes WHERE minute = $1`, [old])).toHaveLength(0);
    expect(await db.query(`SELECT 1 FROM activity_hours WHERE minute = date_trunc('hour', $1::timestamptz)`, [old])).toHaveLength(0);
  });

  it('refuses a window it does not know and an unknown filter, with a stable reason', async () => {
    for (const query of [{ window: '30d' }, { window: '1h', tenant: 'globex' }] as Record<string, string>[]) {
      const res = await series(OPERATOR_TOKEN, query);
      expect(res.status).toBe(400);
      expect(res.body.reason).toBe('invalid_query');
    }
  });
});
