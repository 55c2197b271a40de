import request from 'supertest';
import { RejectionLog } from '../../src/ingestion/rejection-log';
import { RetentionService } from '../../src/retention/retention.service';
import { signStripe, stripeEvent } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';

const SECRET = 'whsec_rejection_log_secret_0123';
const ACME_TOKEN = 'acme-viewer-token-0123456789';
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
const acme = { Authorization: `Bearer ${ACME_TOKEN}` };
const PER_MINUTE = 5;
const endpoints = ['acme', 'globex', 'initech'].map((tenant) => ({
  id: `stripe-${tenant}`,
  provider: 'stripe',
  tenantId: tenant,
  secrets: [{ label: 'k', value: SECRET }],
  maxBodyBytes: 2048,
}));

/** The rejected-request log (issue 37): sampled and bounded per endpoint, never a header value, a body or a secret. */
describe('rejected-request log', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints,
      env: {
        ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN},acme:viewer@acme:${ACME_TOKEN}`,
        REJECTION_LOG_PER_MINUTE: String(PER_MINUTE),
        REJECTION_LOG_MAX_ROWS: '100',
        RETENTION_REJECTION_DAYS: '7',
      },
    },
    (started) => ({ db, t } = started),
  );

  const log = () => t.app.get(RejectionLog);

  function post(endpoint: string, headers: Record<string, string>, body: string): request.Test {
    return request(t.url)
      .post(`/webhooks/${endpoint}`)
      .set({ 'Content-Type': 'application/json', 'X-Forwarded-For': '203.0.113.9', ...headers })
      .send(body);
  }

  it('keeps the time, endpoint, stable reason, status, address and sizes of each refusal; never a header value or the body', async () => {
    const body = JSON.stringify(stripeEvent({ id: 'evt_secret_marker_body' }));
    const forged = signStripe(body, 'whsec_not_the_secret_marker');
    const bad = await post('stripe-acme', { ...forged.headers, 'X-Custom': 'header_value_marker' }, body);
    expect({ status: bad.status, reason: bad.body.reason }).toEqual({ status: 401, reason: 'invalid_signature' });
    const stale = signStripe(body, SECRET, Math.floor(Date.now() / 1000) - 3600);
    expect((await post('stripe-acme', stale.headers, body)).body.reason).toBe('timestamp_out_of_tolerance');
    expect((await post('stripe-acme', {}, body)).body.reason).toBe('missing_signature');
    expect((await post('stripe-acme', {}, 'x'.repeat(4000))).status).toBe(413);
    await log().flush();

    const rows = await db.query(`SELECT * FROM webhook_rejections WHERE endpoint_id = 'stripe-acme' ORDER BY id`);
    expect(rows.map((r) => [r.reason, r.http_status, r.tenant_id, r.provider])).toEqual([
      ['invalid_signature', 401, 'acme', 'stripe'],
      ['timestamp_out_of_tolerance', 401, 'acme', 'stripe'],
      ['missing_signature', 401, 'acme', 'stripe'],
      ['body_too_large', 413, 'acme', 'stripe'],
    ]);
    expect(rows[0]).toMatchObject({ received_bytes: Buffer.byteLength(body), declared_bytes: String(Buffer.byteLength(body)) });
    // Refused on its declared length before a byte was read.
    expect(rows[3]).toMatchObject({ received_bytes: null, declared_bytes: '4000' });
    // No trusted proxy configured: the peer's address, not the client's X-Forwarded-For claim.
    expect(rows[0].remote_address).toMatch(/127\.0\.0\.1|::1/);
    const text = JSON.stringify(await db.query('SELECT * FROM webhook_rejections'));
    for (const marker of ['secret_marker', 'header_value_marker', 'whsec_', 'v1=', '203.0.113.9']) expect(text).not.toContain(marker);
  });

  it(`samples a flood: at most REJECTION_LOG_PER_MINUTE (${PER_MINUTE}) rows per endpoint and minute, the rest counted`, async () => {
    const body = JSON.stringify(stripeEvent());
    const forged = signStripe(body, 'whsec_wrong');
    for (let i = 0; i < 30; i++) await post('stripe-globex', forged.headers, body);
    await log().flush();
    const rows = await db.query(`SELECT count(*)::int AS n FROM webhook_rejections WHERE endpoint_id = 'stripe-globex'`);
    expect(rows[0].n).toBe(PER_MINUTE);
    const metrics = (await request(t.url).get('/metrics')).text;
    expect(metrics).toMatch(/webhook_rejections_unlogged_total\{endpoint="stripe-globex"\} 25/);
    expect(metrics).toMatch(/webhook_requests_total\{endpoint="stripe-globex",outcome="rejected",reason="invalid_signature"\} 30/);
    // A valid request is untouched by the flood.
    const ok = signStripe(JSON.stringify(stripeEvent()), SECRET);
    expect((await post('stripe-globex', ok.headers, ok.body)).status).toBe(200);
  });

  it('GET /admin/rejections: newest first, filtered, paged with a cursor, scoped to the token’s tenants', async () => {
    const all = await request(t.url).get('/admin/rejections').set(op);
    expect(all.status).toBe(200);
    expect(all.body.items.length).toBeGreaterThanOrEqual(9);
    const times = all.body.items.map((r: { at: string }) => r.at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(all.body.items[0]).toEqual({
      id: expect.any(String),
      at: expect.any(String),
      endpointId: expect.any(String),
      tenantId: expect.any(String),
      provider: 'stripe',
      reason: expect.any(String),
      httpStatus: expect.any(Number),
      remoteAddress: expect.any(String),
      declaredBytes: expect.any(Number),
      receivedBytes: expect.anything(),
      unloggedBefore: expect.any(Number),
    });

    const scoped = await request(t.url).get('/admin/rejections').set(acme);
    expect(scoped.status).toBe(200);
    expect(new Set(scoped.body.items.map((r: { tenantId: string }) => r.tenantId))).toEqual(new Set(['acme']));
    const globexOnly = await request(t.url).get('/admin/rejections?endpoint=stripe-globex').set(acme);
    expect(globexOnly.body.items).toEqual([]);

    const filtered = await request(t.url).get('/admin/rejections?reason=body_too_large').set(op);
    expect(filtered.body.items.map((r: { reason: string }) => r.reason)).toEqual(['body_too_large']);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: request.Response = await request(t.url)
        .get('/admin/rejections')
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set(op);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((r: { id: string }) => r.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.body.items.map((r: { id: string }) => r.id));
  });

  it('answers bad parameters with 400 and a stable reason', async () => {
    const reasonOf = async (query: string) => {
      const res = await request(t.url).get(`/admin/rejections${query}`).set(op);
      return { status: res.status, reason: res.body.reason };
    };
    expect(await reasonOf('?limit=0')).toEqual({ status: 400, reason: 'invalid_limit' });
    expect(await reasonOf('?cursor=!!')).toEqual({ status: 400, reason: 'invalid_cursor' });
    expect(await reasonOf('?status=open')).toEqual({ status: 400, reason: 'invalid_filter' });
    expect(await reasonOf('?from=yesterday')).toEqual({ status: 400, reason: 'invalid_filter' });
    expect((await request(t.url).get('/admin/rejections')).status).toBe(401);
  });

  it('retention drops rows past RETENTION_REJECTION_DAYS and past each endpoint’s REJECTION_LOG_MAX_ROWS, oldest first', async () => {
    await db.query(`
      INSERT INTO webhook_rejections (at, endpoint_id, tenant_id, provider, reason, http_status, remote_address)
      SELECT now() - n * interval '1 second', 'stripe-initech', 'initech', 'stripe', 'invalid_signature', 401, '192.0.2.1'
        FROM generate_series(1, 150) n`);
    await db.query(`
      INSERT INTO webhook_rejections (at, endpoint_id, tenant_id, provider, reason, http_status, remote_address)
      SELECT now() - interval '8 days', 'stripe-acme', 'acme', 'stripe', 'invalid_signature', 401, '192.0.2.1'
        FROM generate_series(1, 3)`);
    const retention = t.app.get(RetentionService);
    const result = await retention.runOnce();
    expect(result.rejectionsPruned).toBe(53);
    const [kept] = await db.query(
      `SELECT count(*)::int AS n, min(at) > now() - interval '101 seconds' AS newest_kept
         FROM webhook_rejections WHERE endpoint_id = 'stripe-initech'`,
    );
    expect(kept).toEqual({ n: 100, newest_kept: true });
    const [old] = await db.query(`SELECT count(*)::int AS n FROM webhook_rejections WHERE at < now() - interval '7 days'`);
    expect(old.n).toBe(0);
  });
});
