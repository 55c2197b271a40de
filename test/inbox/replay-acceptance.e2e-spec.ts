import request from 'supertest';
import { signStripe } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { createOrder, drain, inboxRow, orderRow, outboxRows, paymentIntentEvent, STRIPE_SECRET, TENANT } from './worker-fixtures';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const endpoint = (eventTypes: string[]) => ({
  id: 'stripe-acme',
  provider: 'stripe',
  tenantId: TENANT,
  secrets: [{ label: 'current', value: STRIPE_SECRET }],
  eventTypes,
  expect: { account: 'acct_acme' },
});
const ACCEPTED = ['payment_intent.succeeded', 'charge.refunded'];

/**
 * `expect` and `eventTypes` authorise an event for an endpoint; a signature only
 * authenticates it. No replay, single or bulk, may give an event the effect its
 * endpoint refused, and the worker re-runs the decision before any handler.
 */
describe('replay never undoes an acceptance decision', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url, endpoints: [endpoint(ACCEPTED)] });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function deliver(event: Record<string, unknown>): Promise<{ status: string; reason?: string; id: string }> {
    const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    const res = await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
    expect(res.status).toBe(200);
    const row = await inboxRow(db, event.id as string);
    return { status: res.body.status, reason: res.body.reason, id: String(row.id) };
  }

  const replay = (id: string) => request(t.url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'customer says it paid' });
  const bulk = (filter: object, dryRun: boolean) =>
    request(t.url).post('/admin/inbox/replay').set(op).send({ filter, dryRun, reason: 'replay payments' });

  it('an event signed for another connected account is never replayed, single or bulk, and never reaches a handler', async () => {
    await createOrder(t, 'o-victim');
    const evil = await deliver({
      ...paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-victim', id: 'evt_evil' }),
      account: 'acct_EVIL',
    });
    expect(evil).toMatchObject({ status: 'ignored', reason: 'unexpected_source' });

    const single = await replay(evil.id);
    expect(single.status).toBe(409);
    expect(single.body.reason).toBe('source_not_accepted');

    // The filter: ignored rows are not included unless the filter names the status.
    const filter = { type: 'payment_intent.succeeded', tenant: TENANT };
    expect((await bulk(filter, true)).body).toMatchObject({ count: 0 });
    expect((await bulk(filter, false)).body).toMatchObject({ count: 0 });
    const named = { ...filter, status: 'ignored' };
    const dry = await bulk(named, true);
    expect(dry.body).toMatchObject({ count: 0, refused: { source_not_accepted: 1 } });
    expect((await bulk(named, false)).body).toMatchObject({ count: 0, refused: { source_not_accepted: 1 } });

    await drain(t);
    expect(await inboxRow(db, 'evt_evil')).toMatchObject({ status: 'ignored', status_reason: 'unexpected_source' });
    expect(await orderRow(db, 'o-victim')).toMatchObject({ status: 'awaiting_payment' });
    expect(await outboxRows(db, 'o-victim')).toEqual([]);

    // The audit log records what was refused.
    const audit = await db.query(`SELECT action, details FROM admin_audit WHERE target IN ($1, 'inbox:filter') ORDER BY id`, [
      `inbox:${evil.id}`,
    ]);
    expect(audit.map((a) => a.action)).toEqual(['inbox.replay_refused', 'inbox.replay_bulk_refused']);
    expect(audit[0].details).toMatchObject({ refused: 'source_not_accepted' });
    expect(audit[1].details).toMatchObject({ refused: { source_not_accepted: 1 } });
  });

  it('the worker re-runs the acceptance decision: a row made pending some other way is quarantined with its reason, not handled', async () => {
    await createOrder(t, 'o-forced');
    const evil = await deliver({
      ...paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-forced', id: 'evt_forced' }),
      account: 'acct_EVIL',
    });
    // As an older version's replay (or a hand-written UPDATE) would leave it.
    await db.query(`UPDATE webhook_inbox SET status = 'pending', status_reason = NULL, completed_at = NULL WHERE id = $1`, [evil.id]);
    await drain(t);
    // Quarantined, not settled: the instance that accepted it may have had a newer endpoints file.
    expect(await inboxRow(db, 'evt_forced')).toMatchObject({ status: 'quarantined', status_reason: 'unexpected_source' });
    expect(await orderRow(db, 'o-forced')).toMatchObject({ status: 'awaiting_payment' });
    expect(await outboxRows(db, 'o-forced')).toEqual([]);
    // Its replay is checked against the endpoint's configuration, which still refuses its sender.
    expect((await replay(evil.id)).body).toMatchObject({ reason: 'source_not_accepted' });
  });

  it('a type outside eventTypes is replayable only once the current configuration accepts it', async () => {
    await createOrder(t, 'o-cancel');
    const canceled = await deliver({
      ...paymentIntentEvent('payment_intent.canceled', { orderId: 'o-cancel', id: 'evt_cancel' }),
      account: 'acct_acme',
    });
    expect(canceled).toMatchObject({ status: 'ignored', reason: 'event_type_not_accepted' });
    const refused = await replay(canceled.id);
    expect(refused.status).toBe(409);
    expect(refused.body.reason).toBe('event_type_not_accepted');
    expect((await bulk({ status: 'ignored', tenant: TENANT }, true)).body.refused).toMatchObject({ event_type_not_accepted: 1 });
    await db.query(`UPDATE webhook_inbox SET status = 'pending' WHERE id = $1`, [canceled.id]);
    await drain(t);
    expect(await orderRow(db, 'o-cancel')).toMatchObject({ status: 'awaiting_payment' });
    expect(await inboxRow(db, 'evt_cancel')).toMatchObject({ status: 'quarantined', status_reason: 'event_type_not_accepted' });

    // A new configuration accepts the type: now the replay runs, and the worker applies it.
    const wider = await startTestApp({
      databaseUrl: db.url,
      endpoints: [endpoint([...ACCEPTED, 'payment_intent.canceled'])],
      clock: t.clock,
    });
    try {
      const ok = await request(wider.url).post(`/admin/inbox/${canceled.id}/replay`).set(op).send({ reason: 'cancellations accepted now' });
      expect(ok.status).toBe(200);
      await drain(wider);
      expect(await orderRow(db, 'o-cancel')).toMatchObject({ status: 'canceled' });
    } finally {
      await wider.close();
    }
  });

  it('a row without stored source facts is not replayable on an endpoint with an expect', async () => {
    const ok = await deliver({
      ...paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-old', id: 'evt_old' }),
      account: 'acct_acme',
    });
    // As a row accepted by a version that did not store the facts.
    await db.query(`UPDATE webhook_inbox SET status = 'done', source_facts = NULL WHERE id = $1`, [ok.id]);
    const res = await replay(ok.id);
    expect(res.status).toBe(409);
    expect(res.body.reason).toBe('source_facts_missing');
  });

  it('a bulk dry run answers the count per status and reason of what would run', async () => {
    await db.query(`TRUNCATE webhook_inbox`);
    const a = await deliver({
      ...paymentIntentEvent('payment_intent.succeeded', { orderId: 'o-dry1', id: 'evt_dry1' }),
      account: 'acct_acme',
    });
    const b = await deliver({ ...paymentIntentEvent('charge.refunded', { orderId: 'o-dry2', id: 'evt_dry2' }), account: 'acct_acme' });
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'max_attempts' WHERE id = $1`, [a.id]);
    await db.query(`UPDATE webhook_inbox SET status = 'done' WHERE id = $1`, [b.id]);
    const dry = await bulk({ tenant: TENANT }, true);
    expect(dry.body).toMatchObject({ count: 2, byStatus: { quarantined: { max_attempts: 1 }, done: { none: 1 } }, refused: {} });
  });
});
