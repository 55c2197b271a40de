import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';
import { InboxPayloads } from '../../src/inbox/inbox-payloads';
import { insertErpRow } from '../outbox/outbox-rows';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';

const SECRET = 'whsec_tenant_scope_secret';
const ACME_TOKEN = 'acme-operator-token-0123456789';
const acme = { Authorization: `Bearer ${ACME_TOKEN}` };
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const viewer = { Authorization: `Bearer ${VIEWER_TOKEN}` };
const endpoints = ['acme', 'globex'].map((tenant) => ({
  id: `stripe-${tenant}`,
  provider: 'stripe',
  tenantId: tenant,
  secrets: [{ label: 'k', value: SECRET }],
}));

/** An admin token limited to tenants sees and acts on those tenants only: 404 for the others, never a hint. */
describe('admin tokens limited to tenants, and audited payload reads', () => {
  let db: TestDatabase;
  let t: TestApp;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints,
      env: {
        ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN},acme-ops:operator@acme:${ACME_TOKEN}`,
        // Sealed payloads: a read that reaches the payload decrypts it.
        PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      },
    });
    for (const tenant of ['acme', 'globex']) {
      const signed = signStripe(stripeEvent({ id: `evt_${tenant}`, type: 'charge.refunded' }), SECRET);
      expect((await request(t.url).post(`/webhooks/stripe-${tenant}`).set(signed.headers).send(signed.body)).status).toBe(200);
      const [row] = await db.query(`SELECT id::text FROM webhook_inbox WHERE event_id = $1`, [`evt_${tenant}`]);
      ids[tenant] = row.id;
      await insertErpRow(db, `o-${tenant}`, tenant);
      await db.query(`UPDATE outbox SET status = 'dead' WHERE tenant_id = $1`, [tenant]);
      await request(t.url)
        .post('/admin/orders')
        .set(op)
        .send({ tenantId: tenant, id: `o-${tenant}`, totalMinor: 100, currency: 'eur', customerEmail: `b@${tenant}.example` });
    }
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined'`);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('lists only its tenants, even when the filter names another', async () => {
    const all = await request(t.url).get('/admin/inbox').set(acme);
    expect(all.body.items.map((i: { tenantId: string }) => i.tenantId)).toEqual(['acme']);
    expect((await request(t.url).get('/admin/inbox?tenant=globex').set(acme)).body.items).toEqual([]);
    const outbox = await request(t.url).get('/admin/outbox').set(acme);
    expect(outbox.body.items.map((i: { tenantId: string }) => i.tenantId)).toEqual(['acme']);
  });

  it('answers 404 for another tenant in single reads, replays and repairs, and changes nothing', async () => {
    const other = ids.globex;
    const read = await request(t.url).get(`/admin/inbox/${other}`).set(acme);
    expect(read.status).toBe(404);
    expect(read.body.reason).toBe('inbox_event_not_found');
    for (const action of ['replay', 'quarantine']) {
      const res = await request(t.url).post(`/admin/inbox/${other}/${action}`).set(acme).send({ reason: 'x' });
      expect(res.status).toBe(404);
      expect(res.body.reason).toBe('inbox_event_not_found');
    }
    const [globexOutbox] = await db.query(`SELECT id::text FROM outbox WHERE tenant_id = 'globex'`);
    expect((await request(t.url).get(`/admin/outbox/${globexOutbox.id}`).set(acme)).status).toBe(404);
    expect((await request(t.url).post(`/admin/outbox/${globexOutbox.id}/retry`).set(acme).send({ reason: 'x' })).status).toBe(404);
    expect((await request(t.url).get('/admin/orders/globex/o-globex').set(acme)).status).toBe(404);
    const create = await request(t.url)
      .post('/admin/orders')
      .set(acme)
      .send({ tenantId: 'globex', id: 'o-new', totalMinor: 1, currency: 'eur', customerEmail: 'x@globex.example' });
    expect(create.status).toBe(404);
    expect(await db.query(`SELECT status FROM webhook_inbox WHERE id = $1`, [other])).toEqual([{ status: 'quarantined' }]);
    expect(await db.query(`SELECT id FROM orders WHERE id = 'o-new'`)).toEqual([]);
    // Its own tenant works as for any operator.
    expect((await request(t.url).get(`/admin/inbox/${ids.acme}`).set(acme)).status).toBe(200);
    expect((await request(t.url).get('/admin/orders/acme/o-acme').set(acme)).status).toBe(200);
  });

  it("does the same work for another tenant's id as for a missing one, and opens no payload", async () => {
    const [globexOutbox] = await db.query(`SELECT id::text FROM outbox WHERE tenant_id = 'globex'`);
    const missing = '987654321';
    const pairs: [string, (id: string) => request.Test][] = [
      ['inbox read', (id) => request(t.url).get(`/admin/inbox/${id}`).set(acme)],
      ['inbox timeline', (id) => request(t.url).get(`/admin/inbox/${id}/timeline`).set(acme)],
      ['inbox replay', (id) => request(t.url).post(`/admin/inbox/${id}/replay`).set(acme).send({ reason: 'x' })],
      ['inbox quarantine', (id) => request(t.url).post(`/admin/inbox/${id}/quarantine`).set(acme).send({ reason: 'x' })],
    ];
    const outboxPairs: typeof pairs = [
      ['outbox read', (id) => request(t.url).get(`/admin/outbox/${id}`).set(acme)],
      ['outbox retry', (id) => request(t.url).post(`/admin/outbox/${id}/retry`).set(acme).send({ reason: 'x' })],
      ['outbox resolve', (id) => request(t.url).post(`/admin/outbox/${id}/resolve`).set(acme).send({ outcome: 'delivered', reason: 'x' })],
    ];
    const orders: typeof pairs = [['order read', (id) => request(t.url).get(`/admin/orders/globex/${id}`).set(acme)]];
    for (const [other, list] of [
      [ids.globex, pairs],
      [globexOutbox.id, outboxPairs],
      ['o-globex', orders],
    ] as const) {
      for (const [what, send] of list) {
        const theirs = await workOf(() => send(other));
        const none = await workOf(() => send(missing));
        expect({ what, ...theirs }).toEqual({ what, ...none });
        expect({ what, status: theirs.status, payloadOpens: theirs.payloadOpens }).toEqual({ what, status: 404, payloadOpens: 0 });
      }
    }
    expect(await db.query(`SELECT status FROM webhook_inbox WHERE id = $1`, [ids.globex])).toEqual([{ status: 'quarantined' }]);
    expect(await db.query(`SELECT status FROM outbox WHERE id = $1`, [globexOutbox.id])).toEqual([{ status: 'dead' }]);
  });

  /** The answer, each statement the database ran with the rows it returned, and the payloads opened while serving one request. */
  async function workOf(send: () => request.Test) {
    const payloads = t.app.get(InboxPayloads);
    const queries = jest.spyOn(PostgresQueryRunner.prototype, 'query');
    const opens = [jest.spyOn(payloads, 'open'), jest.spyOn(payloads, 'openSealed')];
    try {
      const res = await send();
      const results = await Promise.all(queries.mock.results.map((r) => r.value as Promise<unknown>));
      return {
        status: res.status,
        body: res.body,
        statements: queries.mock.calls.map(([sql], i) => ({ sql: sql.replace(/\s+/g, ' ').trim(), rows: rowsOf(results[i]) })),
        payloadOpens: opens.reduce((n, spy) => n + spy.mock.calls.length, 0),
      };
    } finally {
      queries.mockRestore();
      for (const spy of opens) spy.mockRestore();
    }
  }

  it('bulk replays and stats cover its tenants only', async () => {
    const dry = await request(t.url)
      .post('/admin/inbox/replay')
      .set(acme)
      .send({ filter: { status: 'quarantined' }, dryRun: true, reason: 'x' });
    expect(dry.body.count).toBe(1);
    const real = await request(t.url)
      .post('/admin/inbox/replay')
      .set(acme)
      .send({ filter: { status: 'quarantined' }, dryRun: false, reason: 'x' });
    expect(real.body.count).toBe(1);
    expect(await db.query(`SELECT tenant_id, status FROM webhook_inbox ORDER BY tenant_id`)).toEqual([
      { tenant_id: 'acme', status: 'pending' },
      { tenant_id: 'globex', status: 'quarantined' },
    ]);
    const stats = await request(t.url).get('/admin/stats').set(acme);
    expect(stats.status).toBe(200);
    expect(stats.body.inbox.byStatus).toEqual({ pending: 1 });
    expect(stats.body.outbox.byStatus).toEqual({ dead: 1 });
  });

  it('shows a bulk action in its timeline without the actor and reason of an operator whose filter spanned other tenants', async () => {
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined'`);
    const bulk = await request(t.url)
      .post('/admin/inbox/replay')
      .set(op)
      .send({ filter: { status: 'quarantined' }, dryRun: false, reason: 'globex outage, ticket 4711' });
    expect(bulk.body.count).toBe(2);
    const actions = async (who: Record<string, string>) =>
      (await request(t.url).get(`/admin/inbox/${ids.acme}/timeline`).set(who)).body.entries
        .filter(
          (e: { kind: string; detail: { action: string } }) => e.kind === 'operator_action' && e.detail.action === 'inbox.replay_bulk',
        )
        .map((e: { detail: object }) => e.detail);
    expect(await actions(acme)).toMatchObject([
      // Its own bulk replay (the test before), limited to acme: told in full.
      { action: 'inbox.replay_bulk', actor: 'acme-ops', reason: 'x' },
      { action: 'inbox.replay_bulk', actor: null, reason: null, afterStatus: 'pending' },
    ]);
    expect(await actions(op)).toMatchObject([
      { actor: 'acme-ops', reason: 'x' },
      { actor: 'ops', reason: 'globex outage, ticket 4711' },
    ]);
  });

  it('signs in: /admin/session names the token and its tenants', async () => {
    const res = await request(t.url).get('/admin/session').set(acme);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'acme-ops', role: 'operator', tenants: ['acme'] });
  });

  it('reaches no route that does not scope by tenant (the audit log)', async () => {
    expect((await request(t.url).get('/admin/audit').set(acme)).status).toBe(404);
    expect((await request(t.url).get('/admin/audit').set(op)).status).toBe(200);
  });

  it('writes every operator payload read to the audit log (who, which row, when), never the payload', async () => {
    await db.query(`DELETE FROM admin_audit`);
    expect((await request(t.url).get(`/admin/inbox/${ids.globex}`).set(viewer)).status).toBe(200);
    expect(await db.query(`SELECT id FROM admin_audit`)).toEqual([]);
    const read = await request(t.url).get(`/admin/inbox/${ids.globex}`).set(op);
    expect(read.body.payload).toMatchObject({ id: 'evt_globex' });
    const [outboxRow] = await db.query(`SELECT id::text FROM outbox WHERE tenant_id = 'globex'`);
    expect((await request(t.url).get(`/admin/outbox/${outboxRow.id}`).set(op)).body.payload).toBeDefined();
    const audit = await db.query(`SELECT actor, action, target, at, details FROM admin_audit ORDER BY id`);
    expect(audit.map((a) => [a.actor, a.action, a.target])).toEqual([
      ['ops', 'inbox.payload_read', `inbox:${ids.globex}`],
      ['ops', 'outbox.payload_read', `outbox:${outboxRow.id}`],
    ]);
    expect(audit[0].at).toBeInstanceOf(Date);
    expect(JSON.stringify(audit)).not.toContain('evt_globex');
  });
});

/** Rows a statement returned: a SELECT's array, or the rows of an UPDATE's [rows, count]. */
function rowsOf(result: unknown): number {
  if (!Array.isArray(result)) return 0;
  return result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? result[0].length : result.length;
}
