import request from 'supertest';
import { RetentionResult, RetentionService } from '../../src/retention/retention.service';
import { RetentionScheduler } from '../../src/retention/retention.scheduler';
import { FakeClock } from '../support/fake-clock';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { STORED_PAYLOADS } from '../inbox/worker-fixtures';

const SECRET = 'whsec_retention_test_secret';
const DAY_MS = 24 * 60 * 60 * 1000;
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const endpoints = [
  {
    id: 'stripe-acme',
    provider: 'stripe',
    tenantId: 'acme',
    secrets: [{ label: 'current', value: SECRET }],
    eventTypes: ['payment_intent.succeeded'],
  },
];

interface InboxRow {
  id: string;
  event_id: string;
  status: string;
  payload_sha256: string;
  has_payload: boolean;
  deliveries: number;
}

describe('retention job (issue 5 item 7)', () => {
  let db: TestDatabase;
  let t: TestApp;
  let retention: RetentionService;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url, endpoints }); // RETENTION_PAYLOAD_DAYS 7, RETENTION_IDENTITY_DAYS 30
    retention = t.app.get(RetentionService);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    t.clock.offsetMs = 0;
    await db.query('TRUNCATE webhook_inbox, webhook_inbox_payloads, outbox');
  });

  /** Posts a signed event (signed at the app's clock, as the provider would be "now"). */
  async function post(event: Record<string, unknown>): Promise<request.Response> {
    const signed = signStripe(event, SECRET, Math.floor(t.clock.now().getTime() / 1000));
    return request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
  }

  /** Delivers one event and leaves its row in `status`; `ageOffsetDays` > 0 makes it younger. */
  async function deliver(eventId: string, status: string, ageOffsetDays = 0): Promise<Record<string, unknown>> {
    const event = stripeEvent({ id: eventId });
    const res = await post(event);
    expect(res.status).toBe(200);
    await db.query(
      `UPDATE webhook_inbox
          SET status = $2, locked_by = CASE WHEN $2 = 'processing' THEN 'w1' END,
              locked_until = CASE WHEN $2 = 'processing' THEN now() + interval '1 hour' END,
              received_at = received_at + $3 * interval '1 day'
        WHERE event_id = $1`,
      [eventId, status, ageOffsetDays],
    );
    // Its payload moves to the day it was "received" (a partition made ahead).
    await db.query(
      `UPDATE webhook_inbox_payloads wp SET day = wp.day + $2::int FROM webhook_inbox i WHERE wp.inbox_id = i.id AND wp.day = i.payload_day AND i.event_id = $1`,
      [eventId, ageOffsetDays],
    );
    await db.query(`UPDATE webhook_inbox SET payload_day = payload_day + $2::int WHERE event_id = $1`, [eventId, ageOffsetDays]);
    return event;
  }

  async function inbox(): Promise<Record<string, InboxRow>> {
    const rows = await db.query<InboxRow>(
      `SELECT i.id::text, i.event_id, i.status, i.payload_sha256, stored.has_payload, i.deliveries
         FROM webhook_inbox i JOIN ${STORED_PAYLOADS} ON stored.id = i.id`,
    );
    return Object.fromEntries(rows.map((r) => [r.event_id, r]));
  }

  async function insertOutbox(key: string, status: string, ageOffsetDays = 0): Promise<void> {
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, created_at, delivered_at)
       VALUES ($1, 'erp', 'order.paid', 'acme', '{"orderId":"o1"}', $2, now() + $3 * interval '1 day',
               CASE WHEN $2 = 'delivered' THEN now() + $3 * interval '1 day' END)`,
      [key, status, ageOffsetDays],
    );
  }

  /** `n` settled inbox rows (done) and `n` delivered outbox rows, received/created now. */
  async function insertMany(n: number): Promise<void> {
    await db.query(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
                                  payload_sha256, verified_with, status, completed_at)
       SELECT 'acme:stripe:bulk', 'evt_bulk_' || g, 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded',
              jsonb_build_object('id', 'evt_bulk_' || g), encode(sha256(g::text::bytea), 'hex'), 'current', 'done', now()
         FROM generate_series(1, $1) g`,
      [n],
    );
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, delivered_at)
       SELECT 'erp:order-paid:acme:bulk' || g, 'erp', 'order.paid', 'acme', '{}', 'delivered', now()
         FROM generate_series(1, $1) g`,
      [n],
    );
  }

  it('purges payloads of settled events past RETENTION_PAYLOAD_DAYS, keeping identity, digest and status', async () => {
    await deliver('evt_done', 'done');
    await deliver('evt_ignored', 'ignored');
    await deliver('evt_quarantined', 'quarantined');
    await deliver('evt_pending', 'pending');
    await deliver('evt_processing', 'processing');
    await deliver('evt_young', 'done', 2); // 6 days old after the clock moves 8 days
    const before = await inbox();

    t.clock.advance(8 * DAY_MS);
    const result = await retention.runOnce();

    expect(result).toMatchObject({ payloadsPurged: 2, identitiesDeleted: 0, outboxPruned: 0, capped: false });
    const after = await inbox();
    for (const id of ['evt_done', 'evt_ignored']) {
      expect(after[id]).toEqual({ ...before[id], has_payload: false });
    }
    for (const id of ['evt_quarantined', 'evt_pending', 'evt_processing', 'evt_young']) {
      expect(after[id]).toEqual(before[id]);
      expect(after[id].has_payload).toBe(true);
    }
    // Nothing more is due: a second run (or a second instance) changes nothing.
    expect(await retention.runOnce()).toMatchObject({ payloadsPurged: 0, identitiesDeleted: 0, outboxPruned: 0 });

    const metrics = await request(t.url).get('/metrics');
    expect(metrics.text).toMatch(/retention_rows_total\{action="inbox_payload_purged"\} 2\b/);
    expect(metrics.text).toMatch(/retention_runs_total\{outcome="ok"\} 2\b/);
  });

  it('answers a resend of a purged event `duplicate` (its identity is kept) and refuses its replay with 409 payload_purged', async () => {
    const event = await deliver('evt_resent', 'done');
    t.clock.advance(8 * DAY_MS);
    expect((await retention.runOnce()).payloadsPurged).toBe(1);

    const res = await post(event);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'duplicate', eventId: 'evt_resent' });
    const row = (await inbox()).evt_resent;
    expect(row).toMatchObject({ status: 'done', has_payload: false, deliveries: 2 });

    const replay = await request(t.url).post(`/admin/inbox/${row.id}/replay`).set(op).send({ reason: 'try after purge' });
    expect(replay.status).toBe(409);
    expect(replay.body.reason).toBe('payload_purged');
    expect((await inbox()).evt_resent.status).toBe('done');
  });

  it('deletes settled identities past RETENTION_IDENTITY_DAYS, never open or quarantined ones; a resend after that is new', async () => {
    const done = await deliver('evt_old_done', 'done');
    await deliver('evt_old_ignored', 'ignored');
    await deliver('evt_old_quarantined', 'quarantined');
    await deliver('evt_old_pending', 'pending');
    await deliver('evt_old_processing', 'processing');
    await deliver('evt_29_days', 'done', 2);

    t.clock.advance(31 * DAY_MS);
    const result = await retention.runOnce();

    expect(result).toMatchObject({ identitiesDeleted: 2, payloadsPurged: 1, outboxPruned: 0 });
    const after = await inbox();
    expect(Object.keys(after).sort()).toEqual(['evt_29_days', 'evt_old_pending', 'evt_old_processing', 'evt_old_quarantined']);
    expect(after.evt_29_days).toMatchObject({ status: 'done', has_payload: false });
    expect(after.evt_old_quarantined).toMatchObject({ status: 'quarantined', has_payload: true });
    expect(after.evt_old_pending.has_payload).toBe(true);
    expect(after.evt_old_processing).toMatchObject({ status: 'processing', has_payload: true });

    // The identity is gone: a resend is accepted as a new event (hence the 30-day floor).
    const res = await post(done);
    expect(res.body).toMatchObject({ status: 'accepted', eventId: 'evt_old_done' });
  });

  it('prunes delivered outbox entries past RETENTION_IDENTITY_DAYS and keeps every other status', async () => {
    await insertOutbox('erp:old-delivered', 'delivered');
    await insertOutbox('erp:young-delivered', 'delivered', 2);
    for (const status of ['pending', 'delivering', 'unresolved', 'dead']) await insertOutbox(`erp:old-${status}`, status);

    t.clock.advance(8 * DAY_MS);
    expect((await retention.runOnce()).outboxPruned).toBe(0);
    t.clock.advance(23 * DAY_MS);
    expect((await retention.runOnce()).outboxPruned).toBe(1);

    const keys = await db.query<{ operation_key: string }>('SELECT operation_key FROM outbox ORDER BY operation_key');
    expect(keys.map((k) => k.operation_key)).toEqual([
      'erp:old-dead',
      'erp:old-delivering',
      'erp:old-pending',
      'erp:old-unresolved',
      'erp:young-delivered',
    ]);
  });

  it('works in batches of 1,000 and stops at the per-run cap, the next run going on', async () => {
    await insertMany(2500);
    t.clock.advance(8 * DAY_MS);

    retention.maxBatches = 2;
    let result: RetentionResult;
    try {
      result = await retention.runOnce();
    } finally {
      retention.maxBatches = 100;
    }
    // identities: 1 empty batch; payloads: 2 full batches, capped; outbox and the seven other kinds: 1 empty batch each.
    const others = { abandonedDeleted: 0, ordersPruned: 0, auditPruned: 0, reconciliationRunsPruned: 0, rejectionsPruned: 0 };
    expect(result).toEqual({
      payloadsPurged: 2000,
      payloadDaysDropped: 0,
      identitiesDeleted: 0,
      outboxPruned: 0,
      ...others,
      batches: 11,
      capped: true,
    });
    expect(await retention.runOnce()).toEqual({
      payloadsPurged: 500,
      payloadDaysDropped: 0,
      identitiesDeleted: 0,
      outboxPruned: 0,
      ...others,
      batches: 10,
      capped: false,
    });

    t.clock.advance(23 * DAY_MS);
    // identities: 3 batches (1,000 + 1,000 + 500); payloads: 1 empty; outbox: 3; the others: 1 each.
    expect(await retention.runOnce()).toEqual({
      payloadsPurged: 0,
      payloadDaysDropped: 0,
      identitiesDeleted: 2500,
      outboxPruned: 2500,
      ...others,
      batches: 14,
      capped: false,
    });
    expect(await db.query('SELECT count(*)::int AS n FROM webhook_inbox UNION ALL SELECT count(*)::int FROM outbox')).toEqual([
      { n: 0 },
      { n: 0 },
    ]);
  });

  it('gives every other growing table a lifecycle, and leaves open work and whatever holds work back', async () => {
    await db.query('TRUNCATE orders, order_transitions, admin_audit, reconciliation_runs, webhook_inbox_attempts, outbox_attempts');
    const ago = (days: number) => `now() - interval '${days} days'`;
    // Inbox: quarantined 91 days ago (gone, with its attempts), 89 days ago (kept), and an old pending event (kept).
    for (const [id, status, days] of [
      ['evt_q_old', 'quarantined', 91],
      ['evt_q_young', 'quarantined', 89],
      ['evt_p_old', 'pending', 91],
    ] as const) {
      await deliver(id, status);
      await db.query(
        `UPDATE webhook_inbox SET received_at = ${ago(days)}, completed_at = CASE WHEN status = 'quarantined' THEN ${ago(days)} END WHERE event_id = $1`,
        [id],
      );
    }
    await db.query(
      `INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, outcome) SELECT id, 1, received_at, 'quarantined' FROM webhook_inbox`,
    );
    // Outbox: dead and unresolved 91 days old (gone), one dead that holds a later entry of its order back (kept, and the
    // held entry), a young dead one, an old pending one and one created 91 days ago that died lately (kept).
    const entry = (key: string, status: string, days: number, aggregateSeq?: number) =>
      db.query(
        `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, created_at, aggregate, aggregate_seq)
         VALUES ($1, 'erp', 'order.paid', 'acme', '{}', $2, ${ago(days)}, $3, $4)`,
        [key, status, aggregateSeq === undefined ? null : 'order:o-held', aggregateSeq ?? null],
      );
    await entry('erp:dead-old', 'dead', 91);
    await entry('erp:unresolved-old', 'unresolved', 91);
    await entry('erp:dead-holding', 'dead', 91, 1);
    await entry('erp:held', 'pending', 91, 2);
    await entry('erp:dead-young', 'dead', 89);
    await entry('erp:pending-old', 'pending', 91);
    await entry('erp:dead-lately', 'dead', 91);
    await db.query(
      `INSERT INTO outbox_attempts (outbox_id, attempt, at, lease, outcome) SELECT id, 1, created_at, 'l', 'retry' FROM outbox`,
    );
    // Held back for months behind an earlier entry, then tried and dead a day ago: the operator's window starts there.
    await db.query(
      `INSERT INTO outbox_attempts (outbox_id, attempt, at, lease, outcome) SELECT id, 2, ${ago(1)}, 'l', 'dead' FROM outbox WHERE operation_key = 'erp:dead-lately'`,
    );
    // Orders: unchanged for 401 days (gone, with its transitions), created 401 days ago but changed since (kept).
    const order = (id: string, createdDays: number, updatedDays: number) =>
      db.query(
        `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email, created_at, updated_at)
         VALUES ('acme', $1, 'paid', 1000, 'eur', '', ${ago(createdDays)}, ${ago(updatedDays)})`,
        [id],
      );
    await order('o-old', 401, 401);
    await order('o-refunded-lately', 401, 10);
    await db.query(`INSERT INTO order_transitions (tenant_id, order_id, inbox_id, from_status, to_status, at)
                    SELECT tenant_id, id, 1, 'awaiting_payment', 'paid', created_at FROM orders`);
    // Audit: 401 days old (gone), 399 (kept). Reconciliation runs: finished 31 days ago (gone), 29 (kept), and
    // a requested and a running one from long ago (kept: still someone's work).
    await db.query(`INSERT INTO admin_audit (actor, role, action, target, reason, at) VALUES
                      ('ops', 'operator', 'old', 't', 'r', ${ago(401)}), ('ops', 'operator', 'young', 't', 'r', ${ago(399)})`);
    const run = (reason: string, status: string, days: number) =>
      db.query(
        `INSERT INTO reconciliation_runs (endpoint_id, requested_by, reason, advances_cursor, status, requested_at, finished_at)
         VALUES ($1, 'scheduler', $1, false, $2, ${ago(days)}, CASE WHEN $2 IN ('succeeded', 'failed') THEN ${ago(days)} END)`,
        [reason, status],
      );
    await run('succeeded-old', 'succeeded', 31);
    await run('failed-old', 'failed', 31);
    await run('succeeded-young', 'succeeded', 29);
    await run('requested-old', 'requested', 60);
    await run('running-old', 'running', 60);

    const result = await retention.runOnce();

    expect(result).toMatchObject({ abandonedDeleted: 3, ordersPruned: 1, auditPruned: 1, reconciliationRunsPruned: 2, capped: false });
    expect(Object.keys(await inbox()).sort()).toEqual(['evt_p_old', 'evt_q_young']);
    expect((await db.query('SELECT count(*)::int AS n FROM webhook_inbox_attempts'))[0].n).toBe(2);
    const keys = await db.query<{ operation_key: string }>('SELECT operation_key FROM outbox ORDER BY operation_key');
    expect(keys.map((k) => k.operation_key)).toEqual([
      'erp:dead-holding',
      'erp:dead-lately',
      'erp:dead-young',
      'erp:held',
      'erp:pending-old',
    ]);
    expect((await db.query('SELECT count(*)::int AS n FROM outbox_attempts'))[0].n).toBe(6);
    expect(await db.query('SELECT id FROM orders')).toEqual([{ id: 'o-refunded-lately' }]);
    expect(await db.query('SELECT order_id FROM order_transitions')).toEqual([{ order_id: 'o-refunded-lately' }]);
    expect(await db.query(`SELECT action FROM admin_audit WHERE action IN ('old', 'young')`)).toEqual([{ action: 'young' }]);
    expect((await db.query('SELECT reason FROM reconciliation_runs ORDER BY id')).map((r) => r.reason)).toEqual([
      'succeeded-young',
      'requested-old',
      'running-old',
    ]);
    const metrics = (await request(t.url).get('/metrics')).text;
    for (const [action, n] of [
      ['inbox_quarantined_deleted', 1],
      ['outbox_abandoned_pruned', 2],
      ['orders_pruned', 1],
      ['audit_pruned', 1],
      ['reconciliation_runs_pruned', 2],
    ]) {
      expect(metrics).toMatch(new RegExp(`retention_rows_total\\{action="${action}"\\} ${n}\\b`));
    }

    // 0 keeps a kind for ever, by the operator's choice.
    await db.query(
      `INSERT INTO admin_audit (actor, role, action, target, reason, at) VALUES ('ops', 'operator', 'old', 't', 'r', ${ago(401)})`,
    );
    const settings = t.config.retention;
    const kept = settings.auditDays;
    settings.auditDays = 0;
    try {
      expect((await retention.runOnce()).auditPruned).toBe(0);
    } finally {
      settings.auditDays = kept;
    }
    expect((await retention.runOnce()).auditPruned).toBe(1);
  });

  it('two runs at once share the work: each row is changed once, and nothing fails', async () => {
    await insertMany(2500);
    t.clock.advance(31 * DAY_MS);
    const [a, b] = await Promise.all([retention.runOnce(), retention.runOnce()]);
    expect(a.identitiesDeleted + b.identitiesDeleted).toBe(2500);
    expect(a.outboxPruned + b.outboxPruned).toBe(2500);
    expect(await db.query('SELECT count(*)::int AS n FROM webhook_inbox UNION ALL SELECT count(*)::int FROM outbox')).toEqual([
      { n: 0 },
      { n: 0 },
    ]);
  });

  it('follows a capped run with the next one a second later, not at the next interval', async () => {
    await insertMany(2500);
    const clock = new FakeClock();
    const env = { ROLES: 'maintenance', RETENTION_MAX_BATCHES: '1' };
    const maintenance = await startTestApp({ databaseUrl: db.url, endpoints, env, clock });
    clock.advance(8 * DAY_MS);
    try {
      maintenance.app.get(RetentionScheduler).tick(); // three runs of one batch each: 1,000 + 1,000 + 500
      const stored = async () => (await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE payload IS NOT NULL`))[0].n;
      const deadline = Date.now() + 10_000;
      while ((await stored()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await stored()).toBe(0);
    } finally {
      await maintenance.close();
    }
  });

  it('runs on an instance with the maintenance role, from its scheduler, and stops cleanly', async () => {
    await deliver('evt_scheduled', 'done');
    const clock = new FakeClock();
    const maintenance = await startTestApp({ databaseUrl: db.url, endpoints, env: { ROLES: 'maintenance' }, clock });
    clock.advance(8 * DAY_MS); // after the start, whose clock check wants real time
    try {
      maintenance.app.get(RetentionScheduler).tick();
      const deadline = Date.now() + 10_000;
      while ((await inbox()).evt_scheduled.has_payload && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await inbox()).evt_scheduled).toMatchObject({ status: 'done', has_payload: false });
    } finally {
      await maintenance.close();
    }
  });
});
