import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import request from 'supertest';
import { KeyRing } from '../../src/crypto/key-ring';
import { InboxPayloads } from '../../src/inbox/inbox-payloads';
import { OrdersService } from '../../src/orders/orders.service';
import { runTsChild } from '../support/child-process';
import { signStripe } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';
import {
  chargeRefundedEvent,
  drain,
  ENDPOINTS,
  inboxRow,
  orderRow,
  outboxRows,
  paymentIntentEvent,
  postStripe,
  setDayPayload,
  STORED_PAYLOADS,
  STRIPE_SECRET,
  TENANT,
} from '../inbox/worker-fixtures';

const CLI = join(__dirname, '..', '..', 'src', 'cli', 'cli.ts');
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/** Erasure of one customer's personal data (issue 20 item 5), with payloads encrypted at rest. */
describe('customer erasure: POST /admin/erasure and the CLI', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    { endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}` } },
    (started) => ({ db, t } = started),
  );

  const order = (id: string, customerEmail: string) =>
    t.app.get(OrdersService).create({ tenantId: TENANT, id, totalMinor: 1000, currency: 'eur', customerEmail });
  const stored = async (eventId: string) =>
    (await db.query(`SELECT has_payload FROM ${STORED_PAYLOADS} WHERE event_id = $1`, [eventId]))[0].has_payload;

  it('blanks the address, the recipient of unsent e-mail, and purges the payloads mentioning the customer; identities stay', async () => {
    await order('er-1', 'Ada@Example.com');
    await order('er-2', 'ada@example.com');
    await order('er-3', 'grace@example.com');
    const paid = paymentIntentEvent('payment_intent.succeeded', { orderId: 'er-1' });
    const failed = paymentIntentEvent('payment_intent.payment_failed', { orderId: 'er-2' });
    const mentions = paymentIntentEvent('payment_intent.payment_failed', { orderId: 'er-3' });
    (mentions.data as any).object.receipt_email = 'ada@example.com';
    const other = paymentIntentEvent('payment_intent.payment_failed', { orderId: 'er-3' });
    for (const e of [paid, failed, mentions, other]) await postStripe(t, e);
    await drain(t);
    expect((await outboxRows(db, 'er-1')).map((r) => [r.destination, r.status])).toEqual([
      ['email', 'pending'],
      ['erp', 'pending'],
    ]);

    const body = { email: 'ADA@example.com', reason: 'GDPR request #42' };
    expect(
      (
        await request(t.url)
          .post('/admin/erasure')
          .set({ Authorization: `Bearer ${VIEWER_TOKEN}` })
          .send(body)
      ).status,
    ).toBe(403);
    expect((await request(t.url).post('/admin/erasure').set(op).send({ email: 'ada@example.com' })).body.reason).toBe('reason_required');
    for (const bad of [
      { reason: 'x' },
      { email: 'ada@example.com', tenantId: TENANT, orderId: 'er-1', reason: 'x' },
      { tenantId: TENANT, reason: 'x' },
    ]) {
      expect((await request(t.url).post('/admin/erasure').set(op).send(bad)).body.reason).toBe('invalid_body');
    }
    const res = await request(t.url).post('/admin/erasure').set(op).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      orders: [
        { tenantId: TENANT, orderId: 'er-1' },
        { tenantId: TENANT, orderId: 'er-2' },
      ],
      outboxEntries: 2,
      recipientsBlanked: 1,
      payloadsPurged: 3,
    });

    expect((await orderRow(db, 'er-1')).customer_email).toBe('');
    expect((await orderRow(db, 'er-2')).customer_email).toBe('');
    expect((await orderRow(db, 'er-3')).customer_email).toBe('grace@example.com');
    const [email, erp] = await outboxRows(db, 'er-1');
    expect(email).toMatchObject({ status: 'dead', last_error: 'erased' });
    expect(email.payload.to).toBe('');
    // Never sent afterwards: an operator's retry (or resolution as retry) of it is refused.
    for (const [path, send] of [
      ['retry', { reason: 'careless' }],
      ['resolve', { outcome: 'retry', reason: 'careless' }],
    ] as const) {
      const refused = await request(t.url).post(`/admin/outbox/${email.id}/${path}`).set(op).send(send);
      expect([refused.status, refused.body.reason]).toEqual([409, 'recipient_erased']);
    }
    expect((await outboxRows(db, 'er-1'))[0]).toMatchObject({ status: 'dead', last_error: 'erased' });
    expect(erp).toMatchObject({ status: 'pending' });
    expect([await stored(paid.id as string), await stored(failed.id as string), await stored(mentions.id as string)]).toEqual([
      false,
      false,
      false,
    ]);
    expect(await stored(other.id as string)).toBe(true);
    // Identity and digest stay: a resend is still a duplicate, not a new event.
    expect((await inboxRow(db, paid.id as string)).payload_sha256).toMatch(/^[0-9a-f]{64}$/);
    const signed = signStripe(paid, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).body).toMatchObject({
      status: 'duplicate',
    });

    // Audited with its reason, never with the address.
    const audit = await db.query(`SELECT action, target, reason, details FROM admin_audit WHERE action LIKE 'customer.%' ORDER BY id`);
    expect(audit.map((a) => [a.action, a.target, a.reason])).toEqual([
      ['customer.erase', 'customer:by-email', 'GDPR request #42'],
      ['customer.erase_payloads', 'customer:by-email', 'GDPR request #42'],
    ]);
    expect(audit[0].details).toMatchObject({ orders: ['acme/er-1', 'acme/er-2'] });
    expect(
      (
        await db.query(
          `SELECT count(*)::int AS n FROM admin_audit WHERE (target || reason || coalesce(details::text, '')) ILIKE '%ada@example%'`,
        )
      )[0].n,
    ).toBe(0);

    // A later refund of the erased order reaches the ERP, and no e-mail is written for it.
    await postStripe(t, chargeRefundedEvent({ orderId: 'er-1' }));
    await drain(t);
    expect((await outboxRows(db, 'er-1')).map((r) => r.operation_key)).toEqual([
      'email:receipt:acme:er-1',
      'erp:order-paid:acme:er-1',
      'erp:order-refunded:acme:er-1',
    ]);

    // Again: nothing more to erase.
    expect((await request(t.url).post('/admin/erasure').set(op).send(body)).body).toMatchObject({
      payloadsPurged: 0,
      recipientsBlanked: 0,
    });
  });

  it('by order, from the CLI', async () => {
    const result = await runTsChild(CLI, [
      'erase',
      '--order',
      `${TENANT}/er-3`,
      '--reason',
      'customer asked',
      '--url',
      t.url,
      '--token',
      OPERATOR_TOKEN,
    ]);
    expect(result.code).toBe(0);
    expect(result.output).toContain('"payloadsPurged": 1');
    expect((await orderRow(db, 'er-3')).customer_email).toBe('');
    // Left: only the refund of er-1 that arrived after the first erasure (an erasure acts on what is stored).
    const left = await db.query(`SELECT event_type FROM ${STORED_PAYLOADS} WHERE has_payload`);
    expect(left).toEqual([{ event_type: 'charge.refunded' }]);
    expect(
      (await runTsChild(CLI, ['erase', '--order', 'no-slash', '--reason', 'x', '--url', t.url, '--token', OPERATOR_TOKEN])).output,
    ).toContain('erase needs --email <address> or --order <tenant>/<orderId>');
  }, 60_000);
});

/**
 * Erasure never costs another customer's work, or the customer's own (issue 32, findings 1
 * and 2): exact matching, open events redacted rather than purged, unreadable payloads
 * reported and finished once the key is present, and a dry run.
 */
describe('customer erasure with work still open', () => {
  const k1 = `k1:${randomBytes(32).toString('base64')}`;
  const k0 = { id: 'k0', key: randomBytes(32) };
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: k1 } }, (started) => ({ db, t } = started));

  const order = (id: string, customerEmail: string) =>
    t.app.get(OrdersService).create({ tenantId: TENANT, id, totalMinor: 1000, currency: 'eur', customerEmail });
  const paid = (orderId: string, email: string) => {
    const e = paymentIntentEvent('payment_intent.succeeded', { orderId });
    (e.data as any).object.receipt_email = email;
    return e;
  };
  const erase = (body: object) =>
    request(t.url)
      .post('/admin/erasure')
      .set(op)
      .send({ reason: 'GDPR request', ...body });
  /** The stored payload as the worker would read it (null: purged). */
  const payloadOf = async (eventId: string) => {
    const row = await inboxRow(db, eventId);
    const opened = t.app.get(InboxPayloads).open({ ...row, payload_sealed: row.payload_sealed ?? null });
    if (!opened.ok) throw new Error(opened.reason);
    return opened.payload as any;
  };

  it('erases an@ and leaves jan@ alone; both pending payments still apply (the substring case)', async () => {
    await order('o-10', 'jan@example.com');
    await order('o-11', 'an@example.com');
    const jan = paid('o-10', 'jan@example.com');
    const an = paid('o-11', 'an@example.com');
    await postStripe(t, jan);
    await postStripe(t, an);

    const res = await erase({ email: 'an@example.com' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      dryRun: false,
      orders: [{ tenantId: TENANT, orderId: 'o-11' }],
      payloadsPurged: 0,
      payloadsRedacted: 1,
      unreadable: [],
      complete: true,
    });
    expect((await payloadOf(jan.id as string)).data.object.receipt_email).toBe('jan@example.com');
    expect((await payloadOf(an.id as string)).data.object).toMatchObject({ receipt_email: '', metadata: { order_id: 'o-11' } });
    expect((await orderRow(db, 'o-10')).customer_email).toBe('jan@example.com');

    await drain(t);
    expect(await db.query(`SELECT status FROM webhook_inbox WHERE event_id = ANY($1) ORDER BY id`, [[jan.id, an.id]])).toEqual([
      { status: 'done' },
      { status: 'done' },
    ]);
    expect([(await orderRow(db, 'o-10')).status, (await orderRow(db, 'o-11')).status]).toEqual(['paid', 'paid']);
  });

  it('purges settled payloads, redacts pending, processing and quarantined ones; a dry run first changes nothing', async () => {
    await order('o-20', 'eve@example.com');
    const byStatus: Record<string, Record<string, unknown>> = {};
    for (const status of ['pending', 'processing', 'quarantined', 'done', 'ignored']) {
      byStatus[status] = paid(`other-${status}`, 'Eve@Example.com');
      await postStripe(t, byStatus[status]);
    }
    const set = (status: string, extra = '') =>
      db.query(`UPDATE webhook_inbox SET status = $2 ${extra} WHERE event_id = $1`, [byStatus[status].id, status]);
    await set('processing', `, locked_by = 'elsewhere', locked_until = now() + interval '1 hour'`);
    await set('quarantined', `, status_reason = 'operator'`);
    await set('done', ', completed_at = now()');
    await set('ignored', `, status_reason = 'unhandled_type', completed_at = now()`);
    const before = await db.query(`SELECT id, payload_sealed FROM ${STORED_PAYLOADS} ORDER BY id`);

    const dry = await erase({ email: 'eve@example.com', dryRun: true });
    expect(dry.body).toMatchObject({
      dryRun: true,
      orders: [{ tenantId: TENANT, orderId: 'o-20' }],
      payloadsPurged: 2,
      payloadsRedacted: 3,
      complete: true,
    });
    expect(await db.query(`SELECT id, payload_sealed FROM ${STORED_PAYLOADS} ORDER BY id`)).toEqual(before);
    expect((await orderRow(db, 'o-20')).customer_email).toBe('eve@example.com');
    const [dryAudit] = await db.query(`SELECT id::text, action FROM admin_audit WHERE action LIKE 'customer.%' ORDER BY id DESC LIMIT 1`);
    expect(dryAudit).toEqual({ id: dry.body.auditId, action: 'customer.erase_dry_run' });

    const res = await erase({ email: 'eve@example.com' });
    expect(res.body).toMatchObject({ dryRun: false, payloadsPurged: 2, payloadsRedacted: 3, complete: true });
    for (const status of ['done', 'ignored']) expect((await inboxRow(db, byStatus[status].id as string)).payload_sealed).toBeNull();
    for (const status of ['pending', 'processing', 'quarantined']) {
      const row = await inboxRow(db, byStatus[status].id as string);
      expect([row.status, row.payload_key_id]).toEqual([status, 'k1']);
      expect((await payloadOf(byStatus[status].id as string)).data.object).toMatchObject({
        receipt_email: '',
        metadata: { order_id: `other-${status}` },
      });
    }
    // The quarantined event is still replayable: its payload is there.
    const quarantinedId = (await inboxRow(db, byStatus.quarantined.id as string)).id;
    expect((await request(t.url).post(`/admin/inbox/${quarantinedId}/replay`).set(op).send({ reason: 'after erasure' })).status).toBe(200);
  });

  it('reports a payload sealed with a key this instance lacks, and completes once the key is present', async () => {
    const event = paid('o-30', 'mo@example.com');
    await order('o-30', 'mo@example.com');
    await postStripe(t, event);
    const row = await inboxRow(db, event.id as string);
    // Sealed by an instance that already has the next key (mid-rotation).
    const rotated = new InboxPayloads(new KeyRing([k0])).store(row.source_scope, row.event_id, JSON.stringify(event));
    await db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE id = $1`, [row.id]);
    await setDayPayload(db, event.id as string, `payload_sealed = $2, payload_key_id = 'k0'`, [rotated.payload_sealed]);

    const res = await erase({ email: 'mo@example.com' });
    expect(res.body).toMatchObject({
      payloadsPurged: 0,
      complete: false,
      unreadable: [{ id: String(row.id), keyId: 'k0', reason: 'payload_key_unknown' }],
    });
    expect((await inboxRow(db, event.id as string)).payload_key_id).toBe('k0');
    const [audit] = await db.query(`SELECT action, details FROM admin_audit WHERE action = 'customer.erase_incomplete'`);
    expect(audit.details.unreadable).toEqual([{ id: String(row.id), keyId: 'k0', reason: 'payload_key_unknown' }]);

    const withKey = await startTestApp({
      endpoints: ENDPOINTS,
      databaseUrl: db.url,
      env: { PAYLOAD_KEYS: `${k1},k0:${k0.key.toString('base64')}` },
    });
    try {
      const again = await request(withKey.url)
        .post('/admin/erasure')
        .set(op)
        .send({ email: 'mo@example.com', reason: 'GDPR request, key loaded' });
      expect(again.body).toMatchObject({ payloadsPurged: 1, unreadable: [], complete: true });
      expect((await inboxRow(db, event.id as string)).payload_sealed).toBeNull();
    } finally {
      await withKey.close();
    }
  });
});
