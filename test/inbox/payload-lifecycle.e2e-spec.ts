import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { InboxRepository } from '../../src/inbox/inbox.repository';
import { PayloadDays } from '../../src/inbox/payload-days';
import { OrdersService } from '../../src/orders/orders.service';
import { PayloadReencryptionService } from '../../src/retention/payload-reencryption.service';
import { RetentionService } from '../../src/retention/retention.service';
import { OPERATOR_TOKEN, startTestApp, TestApp, useTestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import {
  ageInbox,
  databaseToday,
  drain,
  ENDPOINTS,
  forgetWithRowHeldAtCarry,
  inboxRow,
  paymentIntentEvent,
  postStripe,
  TENANT,
} from './worker-fixtures';

/**
 * A payload lives in its day's partition apart from its row (issue 38): it must go with its
 * row, stay reachable by an erasure while its day is forgotten, and never be carried back as
 * it was before an erasure. Each test failed before its fix (found by an adversarial review).
 */
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
/** Payload rows (in any attached day, whether or not their inbox row still exists) holding `address`, clear payloads. */
const payloadsHolding = async (db: TestDatabase, address: string) =>
  (await db.query(`SELECT count(*)::int AS n FROM webhook_inbox_payloads WHERE payload::text ILIKE $1`, [`%${address}%`]))[0].n;

const mentioning = (orderId: string, address: string) => {
  const event = paymentIntentEvent('payment_intent.payment_failed', { orderId });
  (event.data as any).object.receipt_email = address;
  return event;
};

/** Clear payloads (no key ring) so the address can be looked for in the table itself. */
describe('payloads of deleted identities (RETENTION_PAYLOAD_DAYS=0: payloads kept as long as their rows)', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { RETENTION_PAYLOAD_DAYS: '0' } }, (started) => ({ db, t } = started));

  it('a settled identity deleted after 30 days takes its payload with it', async () => {
    const address = 'orphan-forever@example.com';
    await t.app.get(OrdersService).create({ tenantId: TENANT, id: 'orph-1', totalMinor: 1000, currency: 'eur', customerEmail: address });
    const event = mentioning('orph-1', address);
    await postStripe(t, event);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
    await ageInbox(db, 31);

    await t.app.get(RetentionService).runOnce();
    // The identity is gone (as documented) ...
    expect(await db.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [event.id])).toEqual([]);
    // ... and its payload with it: none is left that no erasure could reach.
    const erased = await request(t.url).post('/admin/erasure').set(op).send({ email: address, reason: 'GDPR' });
    expect(erased.status).toBe(200);
    expect(erased.body.complete).toBe(true);
    // The contract: after a complete erasure no stored payload holds the address.
    expect(await payloadsHolding(db, address)).toBe(0);
  });
});

describe('payloads of deleted identities and a key rotation (RETENTION_PAYLOAD_DAYS=0)', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];
  afterAll(async () => {
    for (const a of apps) await a.close();
    await db?.drop();
  });

  it('no payload of a deleted identity keeps the old key in use', async () => {
    const k1 = `k1:${randomBytes(32).toString('base64')}`;
    const k2 = `k2:${randomBytes(32).toString('base64')}`;
    db = await createTestDatabase();
    const first = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { RETENTION_PAYLOAD_DAYS: '0', PAYLOAD_KEYS: k1 } });
    apps.push(first);
    await first.app
      .get(OrdersService)
      .create({ tenantId: TENANT, id: 'rot-1', totalMinor: 1000, currency: 'eur', customerEmail: 'r@example.com' });
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'rot-1' });
    await postStripe(first, event);
    await drain(first);
    await ageInbox(db, 31);
    await first.app.get(RetentionService).runOnce();
    expect(await db.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [event.id])).toEqual([]);
    await first.close();
    apps.pop();

    // Rotation: k2 first, the re-encryption job runs to its end.
    const second = await startTestApp({
      databaseUrl: db.url,
      endpoints: ENDPOINTS,
      env: { RETENTION_PAYLOAD_DAYS: '0', PAYLOAD_KEYS: `${k2},${k1}` },
    });
    apps.push(second);
    await second.app.get(PayloadReencryptionService).runOnce();
    await second.app.get(PayloadReencryptionService).runOnce();
    // Nothing left under k1 (no inbox row has a payload under it) ...
    expect(await second.app.get(InboxRepository).payloadRowsOf('k1')).toBe(0);
  });
});

describe('payloads of deleted identities (default payload window)', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS }, (started) => ({ db, t } = started));

  it('a quarantined event (its payload carried forward) replayed late and deleted at 30 days takes its payload with it', async () => {
    const address = 'orphan-carried@example.com';
    await t.app.get(OrdersService).create({ tenantId: TENANT, id: 'orph-2', totalMinor: 1000, currency: 'eur', customerEmail: address });
    const event = mentioning('orph-2', address);
    await postStripe(t, event);
    const row = await inboxRow(db, event.id as string);
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'operator', completed_at = now() WHERE id = $1`, [
      row.id,
    ]);
    // Received 29 days ago; its payload was carried along day by day and is in today's partition now.
    await db.query(`UPDATE webhook_inbox SET received_at = received_at - interval '29 days' WHERE id = $1`, [row.id]);
    expect((await request(t.url).post(`/admin/inbox/${row.id}/replay`).set(op).send({ reason: 'fixed' })).status).toBe(200);
    await drain(t);
    expect((await inboxRow(db, event.id as string)).status).toBe('done');
    // Two days later its identity's 30 days have passed.
    t.clock.advance(2 * 24 * 3600_000);
    try {
      await t.app.get(RetentionService).runOnce();
    } finally {
      t.clock.advance(-2 * 24 * 3600_000);
    }
    expect(await db.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [event.id])).toEqual([]);
    const erased = await request(t.url).post('/admin/erasure').set(op).send({ email: address, reason: 'GDPR' });
    expect(erased.body.complete).toBe(true);
    expect(await payloadsHolding(db, address)).toBe(0);
  });
});

describe('erasure against a day being forgotten', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS }, (started) => ({ db, t } = started));

  it('an open event whose payload waits in a detached day makes an erasure incomplete, until it is run again after the carry', async () => {
    const address = 'detached-day@example.com';
    await t.app.get(OrdersService).create({ tenantId: TENANT, id: 'det-1', totalMinor: 1000, currency: 'eur', customerEmail: address });
    const event = mentioning('det-1', address);
    await postStripe(t, event);
    await db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE event_id = $1`, [event.id]);
    await ageInbox(db, 9);
    const row = await inboxRow(db, event.id as string);

    const first = await forgetWithRowHeldAtCarry(t, db, row.id);
    expect(first.deferred.length).toBe(1);
    expect((await inboxRow(db, event.id as string)).status).toBe('pending');

    // The customer's erasure, now: it cannot reach that payload, and says so.
    const erased = await request(t.url).post('/admin/erasure').set(op).send({ email: address, reason: 'GDPR' });
    expect(erased.status).toBe(200);
    expect(erased.body).toMatchObject({ complete: false, unreadable: [{ id: String(row.id), reason: 'payload_day_being_forgotten' }] });
    // The next run carries it; the erasure run again redacts it.
    await t.app.get(PayloadDays).forgetBefore(undefined, 1000);
    const again = await request(t.url).post('/admin/erasure').set(op).send({ email: address, reason: 'GDPR' });
    expect(again.body).toMatchObject({ complete: true, payloadsRedacted: 1 });
    const after = await inboxRow(db, event.id as string);
    expect(after.has_payload).toBe(true);
    expect(JSON.stringify(after.payload)).not.toContain(address);
  });
});

describe('erasure racing the carry of a day', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS }, (started) => ({ db, t } = started));

  it('an erasure that commits while a carry runs is carried, not undone', async () => {
    const address = 'carry-race@example.com';
    await t.app.get(OrdersService).create({ tenantId: TENANT, id: 'race-1', totalMinor: 1000, currency: 'eur', customerEmail: address });
    // Many open rows of other days ahead of it (ids below): the carry's scan of webhook_inbox_open takes a while to reach it.
    const filler = paymentIntentEvent('payment_intent.succeeded', { orderId: 'race-filler' });
    await postStripe(t, filler);
    await db.query(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload_day, payload_sha256,
                                  verified_with, status, status_reason, completed_at)
       SELECT source_scope, event_id || '_' || g, tenant_id, provider, endpoint_id, event_type, payload_day, payload_sha256,
              verified_with, 'quarantined', 'operator', now()
         FROM webhook_inbox, generate_series(1, 400000) g WHERE event_id = $1`,
      [filler.id],
    );
    const event = mentioning('race-1', address);
    await postStripe(t, event);
    const row = await inboxRow(db, event.id as string);
    // An open (quarantined) event whose day is past the window.
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'operator', completed_at = now() WHERE id = $1`, [
      row.id,
    ]);
    await ageInbox(db, 9, [event.id as string]);
    const [old] = await db.query(`SELECT to_char(payload_day, 'YYYY-MM-DD') AS day FROM webhook_inbox WHERE id = $1`, [row.id]);
    await db.query('ANALYZE webhook_inbox');

    const days = t.app.get(PayloadDays);
    const started = Date.now();
    const carrying = days.carry(old.day, 'webhook_inbox_payloads', 1000);
    // Wait until the carry's statement runs (its snapshot taken), then erase the customer.
    for (;;) {
      const [active] = await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%ORDER BY i.id LIMIT $2%' AND pid <> pg_backend_pid()`,
      );
      if (active.n > 0) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    const erased = await request(t.url).post('/admin/erasure').set(op).send({ email: address, reason: 'GDPR' });
    const erasedAt = Date.now() - started;
    const carried = await carrying;
    const carriedAt = Date.now() - started;
    expect(carried).toBe(1);
    // The erasure says it redacted the event's payload, and completed.
    expect(erased.body).toMatchObject({ payloadsRedacted: 1, complete: true });
    expect(erasedAt).toBeLessThan(carriedAt);
    // Forgetting the old day now (nothing open is left in it) drops the redacted copy.
    const forgotten = await days.forgetBefore(await databaseToday(db), 1000);
    expect(forgotten.dropped).toContain(old.day);
    const after = await inboxRow(db, event.id as string);
    expect(after.has_payload).toBe(true);
    expect(JSON.stringify(after.payload)).not.toContain(address);
  }, 120_000);
});
