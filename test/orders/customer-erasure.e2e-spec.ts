import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import request from 'supertest';
import { OrdersService } from '../../src/orders/orders.service';
import { runTsChild } from '../support/child-process';
import { signStripe } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';
import { chargeRefundedEvent, drain, ENDPOINTS, inboxRow, orderRow, outboxRows, paymentIntentEvent, postStripe, STRIPE_SECRET, TENANT } from '../inbox/worker-fixtures';

const CLI = join(__dirname, '..', '..', 'src', 'cli', 'cli.ts');
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/** Erasure of one customer's personal data (issue 20 item 5), with payloads encrypted at rest. */
describe('customer erasure: POST /admin/erasure and the CLI', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}` } }, (started) => ({ db, t } = started));

  const order = (id: string, customerEmail: string) =>
    t.app.get(OrdersService).create({ tenantId: TENANT, id, totalMinor: 1000, currency: 'eur', customerEmail });
  const stored = async (eventId: string) =>
    (await db.query(`SELECT payload_sealed IS NOT NULL OR payload IS NOT NULL AS has_payload FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0].has_payload;

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
    expect((await request(t.url).post('/admin/erasure').set({ Authorization: `Bearer ${VIEWER_TOKEN}` }).send(body)).status).toBe(403);
    expect((await request(t.url).post('/admin/erasure').set(op).send({ email: 'ada@example.com' })).body.reason).toBe('reason_required');
    for (const bad of [{ reason: 'x' }, { email: 'ada@example.com', tenantId: TENANT, orderId: 'er-1', reason: 'x' }, { tenantId: TENANT, reason: 'x' }]) {
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
    expect(erp).toMatchObject({ status: 'pending' });
    expect([await stored(paid.id as string), await stored(failed.id as string), await stored(mentions.id as string)]).toEqual([false, false, false]);
    expect(await stored(other.id as string)).toBe(true);
    // Identity and digest stay: a resend is still a duplicate, not a new event.
    expect((await inboxRow(db, paid.id as string)).payload_sha256).toMatch(/^[0-9a-f]{64}$/);
    const signed = signStripe(paid, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).body).toMatchObject({ status: 'duplicate' });

    // Audited with its reason, never with the address.
    const audit = await db.query(`SELECT action, target, reason, details FROM admin_audit WHERE action LIKE 'customer.%' ORDER BY id`);
    expect(audit.map((a) => [a.action, a.target, a.reason])).toEqual([
      ['customer.erase', 'customer:by-email', 'GDPR request #42'],
      ['customer.erase_payloads', 'customer:by-email', 'GDPR request #42'],
    ]);
    expect(audit[0].details).toMatchObject({ orders: ['acme/er-1', 'acme/er-2'] });
    expect((await db.query(`SELECT count(*)::int AS n FROM admin_audit WHERE (target || reason || coalesce(details::text, '')) ILIKE '%ada@example%'`))[0].n).toBe(0);

    // A later refund of the erased order reaches the ERP, and no e-mail is written for it.
    await postStripe(t, chargeRefundedEvent({ orderId: 'er-1' }));
    await drain(t);
    expect((await outboxRows(db, 'er-1')).map((r) => r.operation_key)).toEqual([
      'email:receipt:acme:er-1',
      'erp:order-paid:acme:er-1',
      'erp:order-refunded:acme:er-1',
    ]);

    // Again: nothing more to erase.
    expect((await request(t.url).post('/admin/erasure').set(op).send(body)).body).toMatchObject({ payloadsPurged: 0, recipientsBlanked: 0 });
  });

  it('by order, from the CLI', async () => {
    const result = await runTsChild(CLI, ['erase', '--order', `${TENANT}/er-3`, '--reason', 'customer asked', '--url', t.url, '--token', OPERATOR_TOKEN]);
    expect(result.code).toBe(0);
    expect(result.output).toContain('"payloadsPurged": 1');
    expect((await orderRow(db, 'er-3')).customer_email).toBe('');
    // Left: only the refund of er-1 that arrived after the first erasure (an erasure acts on what is stored).
    const left = await db.query(`SELECT event_type FROM webhook_inbox WHERE payload IS NOT NULL OR payload_sealed IS NOT NULL`);
    expect(left).toEqual([{ event_type: 'charge.refunded' }]);
    expect((await runTsChild(CLI, ['erase', '--order', 'no-slash', '--reason', 'x', '--url', t.url, '--token', OPERATOR_TOKEN])).output).toContain(
      'erase needs --email <address> or --order <tenant>/<orderId>',
    );
  }, 60_000);
});
