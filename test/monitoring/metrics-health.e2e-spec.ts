import request from 'supertest';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp, useTestApp } from '../support/test-app';

const SECRET = 'whsec_metrics_test_secret';

function gauge(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  if (!line) throw new Error(`metric ${name}${labels} not found`);
  return Number(line.split(' ')[1]);
}

describe('/metrics and /health', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    // ROLES=api: no worker runs, so accepted events stay pending.
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }],
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('scenario 28: shows the backlog and the oldest pending age growing while no worker runs', async () => {
    const before = await request(t.url).get('/metrics');
    expect(before.status).toBe(200);
    expect(before.headers['content-type']).toContain('text/plain');
    expect(gauge(before.text, 'webhook_inbox_backlog', '{status="pending"}')).toBe(0);
    expect(gauge(before.text, 'webhook_inbox_oldest_pending_age_seconds')).toBe(0);

    for (const id of ['evt_m1', 'evt_m2', 'evt_m3']) {
      const signed = signStripe(stripeEvent({ id }), SECRET);
      expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).status).toBe(200);
    }
    t.clock.advance(2_000); // past the scrape cache
    const first = await request(t.url).get('/metrics');
    expect(gauge(first.text, 'webhook_inbox_backlog', '{status="pending"}')).toBe(3);
    const age1 = gauge(first.text, 'webhook_inbox_oldest_pending_age_seconds');
    expect(age1).toBeGreaterThanOrEqual(1.5);

    t.clock.advance(60_000);
    const second = await request(t.url).get('/metrics');
    const age2 = gauge(second.text, 'webhook_inbox_oldest_pending_age_seconds');
    expect(age2 - age1).toBeGreaterThanOrEqual(59);
    expect(age2 - age1).toBeLessThan(70);
    expect(gauge(second.text, 'webhook_requests_total', '{endpoint="stripe-acme",outcome="accepted",reason=""}')).toBe(3);
    for (const name of [
      'outbox_backlog{status="pending"}',
      'outbox_oldest_pending_age_seconds',
      'outbox_unresolved',
      'webhook_inbox_quarantined',
    ]) {
      expect(second.text).toContain(`\n${name} `);
    }
    expect(second.text).toContain('# TYPE webhook_accept_to_done_seconds histogram');
    expect(second.text).toContain('# TYPE webhook_worker_attempts_total counter');
    expect(second.text).toContain('# TYPE outbox_relay_outcomes_total counter');
  });

  it('answers live and ready', async () => {
    const live = await request(t.url).get('/health/live');
    expect(live.status).toBe(200);
    expect(live.body.status).toBe('ok');
    const ready = await request(t.url).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, migrations: { status: 'up' } } });
  });

  it('is not ready (503) when a migration is pending', async () => {
    await db.query(`DELETE FROM schema_migrations`);
    try {
      const ready = await request(t.url).get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 'error', error: { migrations: { status: 'down' } } });
      expect((await request(t.url).get('/health/live')).status).toBe(200);
    } finally {
      await db.query(`INSERT INTO schema_migrations (timestamp, name) VALUES (1764460800000, 'InitialSchema1764460800000')`);
    }
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  let t: TestApp;
  useTestApp({ env: { METRICS_TOKEN: 'metrics-token-abcdef-0123456789' } }, (started) => ({ t } = started));

  it('needs the token', async () => {
    expect((await request(t.url).get('/metrics')).status).toBe(401);
    expect((await request(t.url).get('/metrics').set('Authorization', 'Bearer wrong')).body.reason).toBe('invalid_token');
    const ok = await request(t.url).get('/metrics').set('Authorization', 'Bearer metrics-token-abcdef-0123456789');
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('webhook_inbox_backlog');
  });
});
