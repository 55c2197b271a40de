import request from 'supertest';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeClock } from '../support/fake-clock';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { insertEmailRow, outboxRow } from './outbox-rows';

const COOLDOWN_MS = 1000;
const FAILURES = 3;
const CONCURRENCY = 4;

/**
 * A destination's health and pace are shared by every relay instance through the
 * database: two app instances here, one clock, rounds run by hand (`runOnce`).
 */
describe('destination circuit, Retry-After pause and rate limit across two relay instances', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  const clock = new FakeClock();
  let apps: TestApp[];
  let relays: OutboxRelay[];

  async function start(extra: Record<string, string> = {}): Promise<void> {
    const env = {
      ERP_URL: erp.url,
      EMAIL_URL: email.sendUrl,
      ERP_CONCURRENCY: String(CONCURRENCY),
      ERP_CIRCUIT_FAILURES: String(FAILURES),
      ERP_CIRCUIT_COOLDOWN_MS: String(COOLDOWN_MS),
      RELAY_TIMEOUT_MS: '800',
      RELAY_LEASE_MS: '5000',
      RELAY_MAX_ATTEMPTS: '1000',
      RETRY_BASE_MS: '200',
      RETRY_MAX_MS: '400',
      LOG_LEVEL: 'info', // transitions to closed are good news, logged at info
      ...extra,
    };
    apps = [await startTestApp({ databaseUrl: db.url, env, clock }), await startTestApp({ databaseUrl: db.url, env, clock })];
    relays = apps.map((a) => a.app.get(OutboxRelay));
  }

  async function stop(): Promise<void> {
    await Promise.all((apps ?? []).map((a) => a.close()));
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
  });
  afterAll(async () => {
    await erp?.close();
    await email?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM outbox');
    await db.query('DELETE FROM outbox_destinations');
    erp.reset();
    email.reset();
    clock.offsetMs = 0;
  });
  afterEach(stop);

  async function insertErpEntries(n: number, prefix: string): Promise<void> {
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
       SELECT 'erp:order-paid:acme:' || $2 || g, 'erp', 'order.paid', 'acme',
              jsonb_build_object('type', 'order.paid', 'tenantId', 'acme', 'orderId', $2 || g, 'amountMinor', 100,
                                 'currency', 'eur', 'paymentId', 'pi_' || g, 'occurredAt', '2026-12-01T10:00:00Z'),
              now() - interval '1 second'
         FROM generate_series(1, $1::int) g`,
      [n, prefix],
    );
  }

  async function counts(): Promise<Record<string, number>> {
    const rows = await db.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM outbox GROUP BY 1`);
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  async function circuit(): Promise<{ circuit: string; paused_until: Date | null }> {
    const [row] = await db.query(`SELECT circuit, paused_until FROM outbox_destinations WHERE destination = 'erp'`);
    return row;
  }

  const logLines = (text: string) => apps.flatMap((a) => a.logs.lines).filter((l) => l.includes(text));

  it('an ERP down for 30 s with 200 entries due gets at most one probe per cool-down while open, across both instances', async () => {
    await start();
    erp.failAlways({ kind: 'status', status: 500 });
    await insertErpEntries(200, 'down-');
    // Until the circuit opens: the first round starts no request once FAILURES answers said down
    // (the ones already in flight then finish), not one per entry.
    await relays[0].runOnce();
    const beforeOpen = erp.posts().length;
    expect(beforeOpen).toBeGreaterThanOrEqual(FAILURES);
    expect(beforeOpen).toBeLessThanOrEqual(FAILURES + CONCURRENCY - 1);
    expect(await circuit()).toMatchObject({ circuit: 'open' });
    const listed = await request(apps[1].url)
      .get('/admin/destinations')
      .set({ Authorization: `Bearer ${VIEWER_TOKEN}` });
    expect(listed.status).toBe(200);
    expect(listed.body.items.find((d: { name: string }) => d.name === 'erp')).toMatchObject({
      registered: true,
      settings: { concurrency: CONCURRENCY, circuit: { failures: FAILURES, cooldownMs: COOLDOWN_MS }, rateLimit: null },
      circuit: { state: 'open', failures: expect.any(Number) },
      paused: false,
      lastError: 'HTTP 500',
      backlog: { pending: 200, held: 0 },
    });
    expect((await request(apps[1].url).get('/metrics')).text).toMatch(/outbox_destination_circuit\{destination="erp",state="open"\} 1/);

    // 30 s of outage in 100 ms steps, both instances running a round at every step.
    const outageStart = clock.now().getTime();
    for (let step = 0; step < 300; step++) {
      clock.advance(100);
      await relays[step % 2].runOnce();
      await relays[(step + 1) % 2].runOnce();
    }
    const elapsed = clock.now().getTime() - outageStart;
    const probes = erp.posts().length - beforeOpen;
    // One probe per cool-down at most (each failed probe opens the circuit for another cool-down).
    expect(probes).toBeLessThanOrEqual(Math.ceil(elapsed / COOLDOWN_MS) + 1);
    expect(probes).toBeGreaterThanOrEqual(Math.floor(elapsed / (COOLDOWN_MS + 300)) - 1);
    expect(logLines('destination circuit opened')).toHaveLength(1);

    // The ERP is back: the next probe closes the circuit and the backlog drains, each key applied once.
    erp.failAlways(undefined);
    for (let i = 0; i < 60 && (await counts()).delivered !== 200; i++) {
      clock.advance(200);
      await relays[i % 2].runOnce();
    }
    expect(await counts()).toEqual({ delivered: 200 });
    expect(erp.effects.size).toBe(200);
    expect(await circuit()).toMatchObject({ circuit: 'closed' });
    expect(logLines('destination circuit closed')).toHaveLength(1);
  });

  it('an ERP that goes down mid-round stops the round after FAILURES answers said down, its earlier answers notwithstanding', async () => {
    await start();
    let posts = 0;
    erp.policy = ({ isQuery }) => (!isQuery && ++posts > 2 ? { kind: 'status', status: 500 } : undefined);
    await insertErpEntries(100, 'mid-');
    await relays[0].runOnce();
    // Two answered, then down: the round starts at most FAILURES more plus what was in flight.
    expect(erp.posts().length).toBeLessThanOrEqual(2 + FAILURES + CONCURRENCY - 1);
    expect(await counts()).toMatchObject({ delivered: 2 });
  });

  it('a 429 with Retry-After: 5 stops every request to that destination for 5 s across both instances; the email flows', async () => {
    await start();
    erp.failNext(1, { kind: 'status', status: 429, headers: { 'Retry-After': '5' } });
    await insertErpEntries(1, 'first-');
    await relays[0].runOnce();
    const { paused_until } = await circuit();
    expect(paused_until).not.toBeNull();
    const listed = await request(apps[1].url)
      .get('/admin/destinations')
      .set({ Authorization: `Bearer ${VIEWER_TOKEN}` });
    expect(listed.body.items.find((d: { name: string }) => d.name === 'erp')).toMatchObject({ paused: true, circuit: { state: 'closed' } });
    expect((await request(apps[1].url).get('/metrics')).text).toMatch(/outbox_destination_paused_seconds\{destination="erp"\} [1-5]/);
    await insertErpEntries(20, 'later-');
    const email1 = await insertEmailRow(db, 'during-pause');
    // Up to just before the end of the pause: not one more request to the ERP, from either instance.
    while (clock.now().getTime() < paused_until!.getTime() - 150) {
      clock.advance(Math.min(250, paused_until!.getTime() - 150 - clock.now().getTime()));
      await relays[0].runOnce();
      await relays[1].runOnce();
    }
    expect(erp.requests).toHaveLength(1);
    expect(await outboxRow(db, email1)).toMatchObject({ status: 'delivered' });
    expect(paused_until!.getTime() - clock.now().getTime()).toBeLessThan(5_000);

    clock.offsetMs += paused_until!.getTime() - clock.now().getTime() + 10;
    await relays[1].runOnce();
    await relays[0].runOnce();
    expect(erp.posts().length).toBeGreaterThan(1);
    expect(logLines('destination asked for a pause')).toHaveLength(1);
  });

  it('the rate limit holds across two relay instances', async () => {
    const RATE = 20;
    await start({ ERP_RATE_LIMIT: String(RATE), ERP_RATE_BURST: '5' });
    await insertErpEntries(300, 'rate-');
    const started = clock.now().getTime();
    for (let step = 0; step < 30; step++) {
      await relays[0].runOnce();
      await relays[1].runOnce();
      clock.advance(100);
    }
    const seconds = (clock.now().getTime() - started) / 1000;
    const sent = erp.posts().length;
    // Burst plus the rate over the time that passed (the clock also runs with real time).
    expect(sent).toBeLessThanOrEqual(5 + RATE * seconds);
    expect(sent).toBeGreaterThanOrEqual(RATE * seconds * 0.6);
    // Each instance with a bucket of its own would have sent about twice as many.
    expect((await counts()).delivered).toBe(sent);
  });
});
