import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createDataSource, runMigrations } from '../../src/database/data-source';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { InboxRepository } from '../../src/inbox/inbox.repository';
import { PayloadDays } from '../../src/inbox/payload-days';
import { CLAIM } from '../../src/inbox/inbox.queries';
import { RetentionService } from '../../src/retention/retention.service';
import { DayPayloads1765640000000 } from '../../migrations/1765640000000-day-payloads';
import { signStripe } from '../support/signers';
import { OPERATOR_TOKEN, startTestApp, TestApp, useTestApp } from '../support/test-app';
import { createTestDatabase, planNodes, TestDatabase } from '../support/test-database';
import {
  ageInbox,
  createOrder,
  drain,
  ENDPOINTS,
  forgetWithRowHeldAtCarry,
  inboxRow,
  orderRow,
  paymentIntentEvent,
  postStripe,
  STORED_PAYLOADS,
  STRIPE_SECRET,
} from './worker-fixtures';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const KEYS = `k1:${randomBytes(32).toString('base64')}`;

const partitions = (db: TestDatabase) =>
  db.query<{ day: string }>(
    `SELECT to_char(to_date(substr(c.relname, 24), 'YYYYMMDD'), 'YYYY-MM-DD') AS day
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_inbox_payloads'::regclass ORDER BY 1`,
  );
const today = async (db: TestDatabase) => (await db.query(`SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS d`))[0].d;

/** Payloads live in webhook_inbox_payloads, one partition per UTC day; a day is forgotten by dropping it (issue 38). */
describe('payload days', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: KEYS } }, (started) => ({ db, t } = started));

  const view = async (eventId: string) =>
    (
      await request(t.url)
        .get(`/admin/inbox/${(await inboxRow(db, eventId)).id}`)
        .set(op)
    ).body as Record<string, any>;

  it('the accept statement writes one payload row in today’s partition for a new event, none for a duplicate', async () => {
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pd-dup' });
    await postStripe(t, event);
    const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    const copies = await Promise.all(
      Array.from({ length: 8 }, () => request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)),
    );
    expect(copies.map((r) => r.body.status)).toEqual(Array(8).fill('duplicate'));
    const row = await inboxRow(db, event.id as string);
    const rows = await db.query(`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM webhook_inbox_payloads WHERE inbox_id = $1`, [row.id]);
    expect(rows).toEqual([{ day: await today(db) }]);
    // Nothing in the row itself: the payload is only in its day.
    expect(await db.query(`SELECT payload, payload_sealed, payload_key_id FROM webhook_inbox WHERE id = $1`, [row.id])).toEqual([
      { payload: null, payload_sealed: null, payload_key_id: null },
    ]);
    expect(await view(event.id as string)).toMatchObject({ payload: event, payloadKeyId: 'k1', payloadPurged: false });
  });

  it('days are made a week ahead at start', async () => {
    const days = (await partitions(db)).map((p) => p.day);
    const first = await today(db);
    expect(days[0] <= first).toBe(true);
    expect(days.length).toBeGreaterThanOrEqual(8);
    const last = new Date(`${first}T00:00:00Z`);
    last.setUTCDate(last.getUTCDate() + 7);
    expect(days).toContain(last.toISOString().slice(0, 10));
  });

  it('forgetting a day drops its partition; open events keep their payload (carried to today) and a quarantined one is still replayable', async () => {
    await db.query('TRUNCATE webhook_inbox, webhook_inbox_payloads');
    const events: Record<string, Record<string, unknown>> = {};
    for (const status of ['done', 'ignored', 'pending', 'quarantined']) {
      await createOrder(t, `pd-${status}`);
      events[status] = paymentIntentEvent('payment_intent.succeeded', { orderId: `pd-${status}` });
      await postStripe(t, events[status]);
    }
    const id = (status: string) => events[status].id as string;
    await db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE event_id = $1`, [id('done')]);
    await db.query(`UPDATE webhook_inbox SET status = 'ignored', status_reason = 'no_handler', completed_at = now() WHERE event_id = $1`, [
      id('ignored'),
    ]);
    await db.query(
      `UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'operator', completed_at = now() WHERE event_id = $1`,
      [id('quarantined')],
    );
    // Nine days ago: past the 7-day payload window, and a whole day before its start.
    await ageInbox(db, 9);
    const [old] = await db.query(`SELECT DISTINCT to_char(payload_day, 'YYYY-MM-DD') AS day FROM webhook_inbox`);
    expect((await partitions(db)).map((p) => p.day)).toContain(old.day);

    const result = await t.app.get(RetentionService).runOnce();
    expect(result).toMatchObject({ payloadDaysDropped: 1, payloadsPurged: 0 });
    expect((await partitions(db)).map((p) => p.day)).not.toContain(old.day);
    expect(await db.query(`SELECT to_regclass('webhook_inbox_payloads_' || replace($1, '-', '')) AS t`, [old.day])).toEqual([{ t: null }]);

    for (const status of ['done', 'ignored']) {
      expect(await view(id(status))).toMatchObject({ status, payload: null, payloadPurged: true });
    }
    const now = await today(db);
    for (const status of ['pending', 'quarantined']) {
      const row = await inboxRow(db, id(status));
      expect([row.status, row.has_payload]).toEqual([status, true]);
      expect((await db.query(`SELECT to_char(payload_day, 'YYYY-MM-DD') AS d FROM webhook_inbox WHERE id = $1`, [row.id]))[0].d).toBe(now);
      expect(await view(id(status))).toMatchObject({ payload: events[status], payloadPurged: false, payloadKeyId: 'k1' });
    }
    // A resend of a forgotten event is still a duplicate; its replay is refused.
    const signed = signStripe(events.done, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).body.status).toBe('duplicate');
    const doneRow = await inboxRow(db, id('done'));
    const refused = await request(t.url).post(`/admin/inbox/${doneRow.id}/replay`).set(op).send({ reason: 'after forgetting' });
    expect([refused.status, refused.body.reason]).toEqual([409, 'payload_purged']);

    const quarantined = await inboxRow(db, id('quarantined'));
    expect((await request(t.url).post(`/admin/inbox/${quarantined.id}/replay`).set(op).send({ reason: 'fixed' })).status).toBe(200);
    await drain(t);
    expect((await inboxRow(db, id('quarantined'))).status).toBe('done');
    expect((await inboxRow(db, id('pending'))).status).toBe('done');
    expect([(await orderRow(db, 'pd-quarantined')).status, (await orderRow(db, 'pd-pending')).status]).toEqual(['paid', 'paid']);
    // Nothing more is due.
    expect(await t.app.get(RetentionService).runOnce()).toMatchObject({ payloadDaysDropped: 0 });
  });

  it('a row replayed as its day goes and held at the carry after the detach keeps its day for the next run, then its payload', async () => {
    await db.query('TRUNCATE webhook_inbox, webhook_inbox_payloads');
    await createOrder(t, 'pd-race');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pd-race' });
    await postStripe(t, event);
    await db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE event_id = $1`, [event.id]);
    await ageInbox(db, 9);
    const row = await inboxRow(db, event.id as string);
    const [old] = await db.query(`SELECT to_char(payload_day, 'YYYY-MM-DD') AS day FROM webhook_inbox WHERE id = $1`, [row.id]);

    const first = await forgetWithRowHeldAtCarry(t, db, row.id);
    expect(first).toMatchObject({ dropped: [], deferred: [old.day] });
    // Its payload, in the detached day, is still sealed with k1: the key may not leave the ring yet.
    const keys = t.app.get(InboxRepository);
    expect(await keys.payloadKeysInUse()).toEqual(['k1']);
    expect(await keys.payloadRowsByKey()).toEqual([{ keyId: 'k1', rows: 1 }]);
    expect(await keys.payloadRowsOf('k1')).toBe(1);
    // The next run carries it from the detached day, then drops the day.
    const second = await t.app.get(PayloadDays).forgetBefore(undefined, 1000);
    expect(second).toMatchObject({ dropped: [old.day], carried: 1 });
    expect(await db.query(`SELECT to_regclass('webhook_inbox_payloads_' || replace($1, '-', '')) AS t`, [old.day])).toEqual([{ t: null }]);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
  });

  it('a row an older instance quarantined `payload_missing` (it reads payloads from the row) is put back to pending, then processed', async () => {
    await createOrder(t, 'pd-old');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pd-old' });
    await postStripe(t, event);
    // What the previous version's worker does with a new row: no payload in the row, quarantined, no handler run.
    await db.query(
      `UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'payload_missing', completed_at = now() WHERE event_id = $1`,
      [event.id],
    );
    await t.app.get(RetentionService).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'pending', status_reason: null });
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
    expect((await orderRow(db, 'pd-old')).status).toBe('paid');
  });

  it('a claim that finds the payload gone from its day (being carried) retries the event, never quarantines it as missing', async () => {
    await createOrder(t, 'pd-moving');
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pd-moving' });
    await postStripe(t, event);
    const row = await inboxRow(db, event.id as string);
    // The row already points at a day its payload is not in yet.
    await db.query(`UPDATE webhook_inbox SET payload_day = payload_day + 1 WHERE id = $1`, [row.id]);
    await t.app.get(InboxWorker).runOnce();
    const after = await inboxRow(db, event.id as string);
    expect([after.status, after.attempts]).toEqual(['pending', 1]);
    expect(after.last_error).toMatch(/payload being carried to a newer day/);
    await db.query(`UPDATE webhook_inbox SET payload_day = payload_day - 1, next_attempt_at = now() WHERE id = $1`, [row.id]);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
  });

  it('the claim reads each claimed row’s payload in its own partition only, never the other days', async () => {
    for (let n = 0; n < 3; n++) await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: `pd-plan-${n}` }));
    await db.query('ANALYZE webhook_inbox');
    const read = new Map<string, number>();
    for (const node of await planNodes(db, CLAIM, ['', 'now()', `'plan-lease'`, '64', '30000']))
      if (node['Relation Name']?.startsWith('webhook_inbox_payloads_')) read.set(node['Relation Name'], node['Actual Loops']);
    const todays = `webhook_inbox_payloads_${(await today(db)).replace(/-/g, '')}`;
    expect(read.get(todays)).toBeGreaterThanOrEqual(3);
    for (const [partition, loops] of read) if (partition !== todays) expect([partition, loops]).toEqual([partition, 0]);
  });

  it('an accept that finds no partition for today (nothing made them for a week) makes it and is accepted', async () => {
    const partition = `webhook_inbox_payloads_${(await today(db)).replace(/-/g, '')}`;
    await db.query(`ALTER TABLE webhook_inbox_payloads DETACH PARTITION ${partition}`);
    await db.query(`DROP TABLE ${partition}`);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'pd-missing-day' });
    await postStripe(t, event);
    expect((await partitions(db)).map((p) => p.day)).toContain(await today(db));
    expect(await view(event.id as string)).toMatchObject({ payload: event, payloadPurged: false });
  });
});

/** A database of the schema before day payloads, with payloads in their rows, migrated live: nothing acknowledged is lost. */
describe('payload days: migrating a populated legacy inbox', () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('keeps every payload readable, processes legacy rows from their own columns, forgets them row by row', async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: KEYS } });
    const sent = new Map<string, Record<string, unknown>>();
    for (const n of [1, 2, 3, 4]) {
      await createOrder(t, `leg-${n}`);
      const event = paymentIntentEvent('payment_intent.succeeded', { orderId: `leg-${n}` });
      await postStripe(t, event);
      sent.set(event.id as string, event);
    }
    await t.close();
    t = undefined;
    await db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE event_id = $1`, [[...sent.keys()][3]]);

    // Back to the previous schema: the migration's down puts every payload in its row (what the old version wrote).
    const dataSource = createDataSource(db.url, 2);
    await dataSource.initialize();
    try {
      const runner = dataSource.createQueryRunner();
      await new DayPayloads1765640000000().down(runner);
      await runner.release();
      await db.query(`DELETE FROM schema_migrations WHERE name = 'DayPayloads1765640000000'`);
      expect(
        await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE payload_sealed IS NOT NULL AND payload_key_id = 'k1'`),
      ).toEqual([{ n: 4 }]);
      expect(await db.query(`SELECT to_regclass('webhook_inbox_payloads') AS t`)).toEqual([{ t: null }]);
      // And forward again, on the populated inbox.
      await runMigrations(dataSource);
    } finally {
      await dataSource.destroy();
    }
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE payload_day IS NULL AND payload_sealed IS NOT NULL`)).toEqual(
      [{ n: 4 }],
    );

    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: KEYS } });
    for (const [eventId, event] of sent) {
      const row = await inboxRow(db, eventId);
      expect((await request(t.url).get(`/admin/inbox/${row.id}`).set(op)).body).toMatchObject({ payload: event, payloadPurged: false });
    }
    // New events go to their day beside the legacy rows.
    await createOrder(t, 'leg-new');
    const fresh = paymentIntentEvent('payment_intent.succeeded', { orderId: 'leg-new' });
    await postStripe(t, fresh);
    expect((await inboxRow(db, fresh.id as string)).payload_day).not.toBeNull();
    await drain(t);
    for (const n of [1, 2, 3, 'new']) expect((await orderRow(db, `leg-${n}`)).status).toBe('paid');
    expect(await db.query(`SELECT count(*)::int AS n FROM ${STORED_PAYLOADS} WHERE has_payload`)).toEqual([{ n: 5 }]);

    // Past the window, the legacy rows are purged by the row-by-row path, the new row's day by its partition.
    await ageInbox(db, 9);
    const result = await t.app.get(RetentionService).runOnce();
    expect(result).toMatchObject({ payloadsPurged: 4, payloadDaysDropped: 1 });
    expect(await db.query(`SELECT count(*)::int AS n FROM ${STORED_PAYLOADS} WHERE has_payload`)).toEqual([{ n: 0 }]);
  }, 120_000);
});
