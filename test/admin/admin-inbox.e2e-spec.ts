import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';

const SECRET = 'whsec_admin_test_secret';
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const viewer = { Authorization: `Bearer ${VIEWER_TOKEN}` };

describe('admin inbox API (scenarios 25-27)', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }],
    },
    (started) => ({ db, t } = started),
  );

  async function deliver(id: string, type = 'payment_intent.succeeded'): Promise<string> {
    const signed = signStripe(stripeEvent({ id, type }), SECRET);
    const res = await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
    expect(res.status).toBe(200);
    const [row] = await db.query<{ id: string }>('SELECT id::text FROM webhook_inbox WHERE event_id = $1', [id]);
    return row.id;
  }

  describe('scenario 25: authentication and roles', () => {
    let id: string;
    beforeAll(async () => {
      id = await deliver('evt_s25');
      await db.query(`UPDATE webhook_inbox SET status = 'quarantined' WHERE id = $1`, [id]);
    });

    it('answers 401 missing_token without a token and invalid_token for a wrong one', async () => {
      const none = await request(t.url).get('/admin/inbox');
      expect(none.status).toBe(401);
      expect(none.body.reason).toBe('missing_token');
      const wrong = await request(t.url).get('/admin/inbox').set({ Authorization: 'Bearer not-a-configured-token' });
      expect(wrong.status).toBe(401);
      expect(wrong.body.reason).toBe('invalid_token');
    });

    it('answers 403 insufficient_role to a viewer replaying, and changes nothing', async () => {
      const res = await request(t.url).post(`/admin/inbox/${id}/replay`).set(viewer).send({ reason: 'try' });
      expect(res.status).toBe(403);
      expect(res.body.reason).toBe('insufficient_role');
      expect(await db.query('SELECT status FROM webhook_inbox WHERE id = $1', [id])).toEqual([{ status: 'quarantined' }]);
      expect(await db.query('SELECT * FROM admin_audit')).toEqual([]);
    });

    it('shows a viewer metadata but no payload; an operator also the payload', async () => {
      const v = await request(t.url).get(`/admin/inbox/${id}`).set(viewer);
      expect(v.status).toBe(200);
      expect(v.body).toMatchObject({ id, eventId: 'evt_s25', status: 'quarantined' });
      expect(v.body).not.toHaveProperty('payload');
      const list = await request(t.url).get('/admin/inbox').set(viewer);
      expect(list.body.items.length).toBeGreaterThan(0);
      for (const item of list.body.items) expect(item).not.toHaveProperty('payload');
      expect(JSON.stringify(list.body)).not.toContain('pi_');

      const o = await request(t.url).get(`/admin/inbox/${id}`).set(op);
      expect(o.body.payload).toMatchObject({ id: 'evt_s25', type: 'payment_intent.succeeded' });
    });
  });

  it('scenario 26: an operator replays one quarantined event with the same identity, audited with the reason', async () => {
    const id = await deliver('evt_s26');
    await db.query(
      `UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'max_attempts', attempts = 10,
              last_error = 'no mapping', completed_at = now(), next_attempt_at = now() + interval '1 day' WHERE id = $1`,
      [id],
    );
    const res = await request(t.url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'mapping fixed in v2' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, before: 'quarantined', after: 'pending' });

    const rows = await db.query(
      `SELECT id::text, event_id, source_scope, status, attempts, locked_by, completed_at, next_attempt_at <= now() AS due
         FROM webhook_inbox WHERE event_id = 'evt_s26'`,
    );
    expect(rows).toEqual([
      expect.objectContaining({ id, event_id: 'evt_s26', status: 'pending', attempts: 0, locked_by: null, completed_at: null, due: true }),
    ]);
    const audit = await db.query(
      `SELECT actor, role, action, target, reason, before_status, after_status FROM admin_audit WHERE target = $1`,
      [`inbox:${id}`],
    );
    expect(audit).toEqual([
      {
        actor: 'ops',
        role: 'operator',
        action: 'inbox.replay',
        target: `inbox:${id}`,
        reason: 'mapping fixed in v2',
        before_status: 'quarantined',
        after_status: 'pending',
      },
    ]);

    // Pending again, so a second replay is refused rather than silently repeated.
    const again = await request(t.url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'twice' });
    expect(again.status).toBe(409);
    expect(again.body.reason).toBe('not_replayable');

    const log = await request(t.url).get('/admin/audit').set(viewer);
    expect(log.body.items[0]).toMatchObject({ action: 'inbox.replay', reason: 'mapping fixed in v2', actor: 'ops' });
  });

  it('scenario 27: bulk replay by filter counts first (dry run), then replays in audited batches', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await deliver(`evt_s27_${i}`, 'charge.refunded'));
    const other = await deliver('evt_s27_other', 'payment_intent.succeeded');
    await db.query(`UPDATE webhook_inbox SET status = 'quarantined' WHERE id = ANY($1::bigint[])`, [[...ids, other]]);
    const body = { filter: { status: 'quarantined', type: 'charge.refunded', tenant: 'acme' }, reason: 'ERP outage over' };

    const dry = await request(t.url)
      .post('/admin/inbox/replay')
      .set(op)
      .send({ ...body, dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ count: 5, dryRun: true });
    expect((await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE status = 'quarantined'`))[0].n).toBeGreaterThanOrEqual(6);
    expect(await db.query(`SELECT * FROM admin_audit WHERE action = 'inbox.replay_bulk'`)).toEqual([]);

    const real = await request(t.url)
      .post('/admin/inbox/replay')
      .set(op)
      .send({ ...body, dryRun: false });
    expect(real.body).toMatchObject({ count: 5, dryRun: false });
    const statuses = await db.query<{ id: string; status: string }>(
      `SELECT id::text, status FROM webhook_inbox WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [[...ids, other]],
    );
    expect(statuses.filter((r) => r.status === 'pending').map((r) => r.id)).toEqual(ids);
    expect(statuses.find((r) => r.id === other)!.status).toBe('quarantined');
    const audit = await db.query(`SELECT reason, details FROM admin_audit WHERE action = 'inbox.replay_bulk'`);
    expect(audit).toHaveLength(1);
    expect(audit[0].reason).toBe('ERP outage over');
    expect(audit[0].details.ids).toEqual(ids);

    const after = await request(t.url)
      .post('/admin/inbox/replay')
      .set(op)
      .send({ ...body, dryRun: true });
    expect(after.body.count).toBe(0);
  });

  it('pages with an opaque cursor, newest first, without gaps or repeats', async () => {
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await request(t.url)
        .get('/admin/inbox')
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set(viewer);
      expect(res.status).toBe(200);
      all.push(...res.body.items.map((i: { id: string }) => i.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    const expected = await db.query<{ id: string }>('SELECT id::text FROM webhook_inbox ORDER BY received_at DESC, id DESC');
    expect(all).toEqual(expected.map((r) => r.id));

    const filtered = await request(t.url).get('/admin/inbox').query({ type: 'charge.refunded', limit: 500 }).set(viewer);
    expect(filtered.body.items).toHaveLength(5);
    expect(filtered.body.nextCursor).toBeNull();
  });

  it.each([
    ['/admin/inbox?status=bogus', 'invalid_filter'],
    ['/admin/inbox?stauts=pending', 'invalid_filter'],
    ['/admin/inbox?from=yesterday', 'invalid_filter'],
    ['/admin/inbox?status=pending&status=done', 'invalid_filter'],
    ['/admin/inbox?limit=501', 'invalid_limit'],
    ['/admin/inbox?limit=0', 'invalid_limit'],
    ['/admin/inbox?limit=0x10', 'invalid_limit'],
    ['/admin/inbox?limit=1e2', 'invalid_limit'],
    ['/admin/inbox?cursor=not*base64', 'invalid_cursor'],
    [`/admin/inbox?cursor=${Buffer.from('["1","x"]').toString('base64url')}`, 'invalid_cursor'],
    [`/admin/inbox?cursor=${Buffer.from('["9223372036854775807","1"]').toString('base64url')}`, 'invalid_cursor'],
    [`/admin/inbox?cursor=${Buffer.from('["-1","1"]').toString('base64url')}`, 'invalid_cursor'],
    ['/admin/inbox/abc', 'invalid_id'],
    ['/admin/inbox/0', 'invalid_id'],
    ['/admin/inbox/99999999999999999999', 'invalid_id'],
    ['/admin/outbox?status=done', 'invalid_filter'],
    ['/admin/audit?cursor=zz', 'invalid_cursor'],
  ])('GET %s is a 400 %s', async (path, reason) => {
    const res = await request(t.url).get(path).set(op);
    expect(res.status).toBe(400);
    expect(res.body.reason).toBe(reason);
  });

  it('rejects a bulk replay with a filter it cannot read, before touching anything', async () => {
    const cases: [object, string][] = [
      [{ filter: { staus: 'quarantined' }, dryRun: false, reason: 'x' }, 'invalid_filter'],
      [{ filter: { status: 'pending' }, dryRun: false, reason: 'x' }, 'invalid_filter'],
      [{ filter: { to: 'tomorrow' }, dryRun: false, reason: 'x' }, 'invalid_filter'],
      [{ filter: {}, dryRun: 'no', reason: 'x' }, 'invalid_body'],
      [{ filter: {}, dryRun: false }, 'reason_required'],
      [{ filter: {}, dryRun: false, reason: '   ' }, 'reason_required'],
    ];
    for (const [body, reason] of cases) {
      const res = await request(t.url).post('/admin/inbox/replay').set(op).send(body);
      expect({ body, status: res.status, reason: res.body.reason }).toEqual({ body, status: 400, reason });
    }
  });

  it('answers input PostgreSQL refuses (a NUL byte, an out-of-range cursor) with 400, never 500', async () => {
    const nul = await request(t.url).get('/admin/inbox').query({ tenant: 'a\u0000b' }).set(op);
    expect(nul.status).toBe(400);
    const cursor = Buffer.from(JSON.stringify(['9999999999999999999', '1'])).toString('base64url');
    const far = await request(t.url).get('/admin/inbox').query({ cursor }).set(op);
    expect(far.status).toBe(400);
  });

  it('writes no audit row when the change fails (same transaction)', async () => {
    const before = (await db.query('SELECT count(*)::int AS n FROM admin_audit'))[0].n;
    const missing = await request(t.url).post('/admin/inbox/987654/replay').set(op).send({ reason: 'nothing there' });
    expect(missing.status).toBe(404);
    expect(missing.body.reason).toBe('inbox_event_not_found');
    const id = await deliver('evt_processing');
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', locked_by = 'w1', locked_until = now() + interval '1 minute' WHERE id = $1`,
      [id],
    );
    const busy = await request(t.url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'while processing' });
    expect(busy.status).toBe(409);
    expect(busy.body.reason).toBe('not_replayable');
    const noReason = await request(t.url).post(`/admin/inbox/${id}/quarantine`).set(op).send({});
    expect(noReason.status).toBe(400);
    expect(noReason.body.reason).toBe('reason_required');
    expect((await db.query('SELECT count(*)::int AS n FROM admin_audit'))[0].n).toBe(before);

    const q = await request(t.url).post(`/admin/inbox/${id}/quarantine`).set(op).send({ reason: 'poison message' });
    expect(q.status).toBe(200);
    expect(await db.query('SELECT status, locked_by FROM webhook_inbox WHERE id = $1', [id])).toEqual([
      { status: 'quarantined', locked_by: null },
    ]);
    expect((await db.query('SELECT count(*)::int AS n FROM admin_audit'))[0].n).toBe(before + 1);
  });
});

describe('admin JSON bodies', () => {
  let t: TestApp;
  useTestApp({}, (started) => ({ t } = started));

  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await request(t.url).post('/admin/inbox/1/replay').set(op).set('Content-Type', 'application/json').send('{"reason":');
    expect(res.status).toBe(400);
    expect(res.body.reason).toBe('invalid_json');
  });
});
