import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp, useTestApp } from '../support/test-app';
import { insertEmailRow, insertErpRow, outboxRow } from './outbox-rows';

const RETRY_MS = 1000;
const MAX_ATTEMPTS = 4;

describe('outbox relay (real PostgreSQL, fake ERP and email API)', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  let relay: OutboxRelay;

  const env = () => ({
    ERP_URL: erp.url,
    EMAIL_URL: email.sendUrl,
    RELAY_TIMEOUT_MS: '800', // hangs cost this much; slack for a loaded CI machine
    RELAY_LEASE_MS: '5000',
    RELAY_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    RETRY_BASE_MS: String(RETRY_MS),
    RETRY_MAX_MS: String(RETRY_MS),
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({ databaseUrl: db.url, env: env() });
    relay = t.app.get(OutboxRelay);
  });
  afterAll(async () => {
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM outbox');
    await db.query('DELETE FROM outbox_destinations');
    erp.reset();
    email.reset();
  });

  /** Moves past any backoff (RETRY_MAX_MS caps it) and runs one relay round. */
  async function laterRound(): Promise<number> {
    t.clock.advance(RETRY_MS);
    return relay.runOnce();
  }

  function expectSameKeyAndBody(fake: FakeDestination, key: string, posts: number, applied = true): void {
    const requests = fake.posts(key);
    expect(requests).toHaveLength(posts);
    for (const r of requests) expect(r.headers['idempotency-key']).toBe(key);
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    expect(fake.effects.has(key)).toBe(applied);
  }

  it('delivers an ERP operation with the documented body and Idempotency-Key', async () => {
    const key = await insertErpRow(db, 'o-1');
    expect(await relay.runOnce()).toBe(1);
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200, locked_by: null });
    const [request] = erp.posts(key);
    expect(request.path).toBe('/operations');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toBe(
      JSON.stringify({
        operationKey: key,
        type: 'order.paid',
        tenantId: 'acme',
        orderId: 'o-1',
        amountMinor: 4200,
        currency: 'eur',
        paymentId: 'pi_o-1',
        occurredAt: '2026-01-01T10:00:00.000Z',
      }),
    );
    expect(await relay.runOnce()).toBe(0);
  });

  it('delivers an email as {to, template, data}', async () => {
    const key = await insertEmailRow(db, 'o-2');
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
    expect(JSON.parse(email.posts(key)[0].body)).toEqual({
      to: 'buyer-o-2@example.com',
      template: 'receipt',
      data: { orderId: 'o-2', amountMinor: 4200, currency: 'eur' },
    });
  });

  it('scenario 20: 500 twice then 200 -> delivered once, same key and body on all three requests', async () => {
    erp.failNext(2, { kind: 'status', status: 500 });
    const key = await insertErpRow(db, 'o-20');
    await relay.runOnce();
    const first = await outboxRow(db, key);
    expect(first).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 500, outcome_unknown: false });
    // Full jitter: somewhere in [now, now + RETRY_MAX_MS).
    expect(first.next_attempt_at.getTime()).toBeLessThanOrEqual(t.clock.now().getTime() + RETRY_MS);
    await laterRound();
    await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 200 });
    expectSameKeyAndBody(erp, key, 3);
    expect(erp.effects.size).toBe(1);
  });

  it('scenario 21: applied but the answer is lost -> the outcome query says applied, no resend', async () => {
    erp.failNext(1, { kind: 'applyThenHang' });
    const key = await insertErpRow(db, 'o-21');
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'pending', outcome_unknown: true, last_error: 'timeout' });
    await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', attempts: 2, outcome_unknown: false });
    expect(erp.queries(key)).toHaveLength(1);
    expectSameKeyAndBody(erp, key, 1);
  });

  it('after a reset with nothing applied, the outcome query says not applied and the relay resends', async () => {
    erp.failNext(1, { kind: 'reset' });
    const key = await insertErpRow(db, 'o-21b');
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'pending', outcome_unknown: true });
    await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
    expect(erp.queries(key)).toHaveLength(1);
    expectSameKeyAndBody(erp, key, 2);
  });

  it('an email whose send was applied then reset is resent under the same key; one effect', async () => {
    email.failNext(1, { kind: 'applyThenReset' });
    const key = await insertEmailRow(db, 'o-21c');
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'pending', outcome_unknown: true });
    await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
    expectSameKeyAndBody(email, key, 2);
    expect(email.effects.size).toBe(1);
  });

  it('if the outcome query fails, the relay retries later without resending', async () => {
    erp.failNext(1, { kind: 'applyThenHang' });
    erp.queryFault = { kind: 'status', status: 503 };
    const key = await insertErpRow(db, 'o-21d');
    await relay.runOnce();
    await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'pending', outcome_unknown: true, last_error: 'outcome query failed' });
    expect(erp.posts(key)).toHaveLength(1);
    erp.queryFault = undefined;
    await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
    expectSameKeyAndBody(erp, key, 1);
  });

  it('scenario 23: a destination that answers nothing -> unresolved after the limit, never claimed again', async () => {
    erp.failAlways({ kind: 'hang' });
    const key = await insertErpRow(db, 'o-23');
    await relay.runOnce();
    for (let i = 1; i < MAX_ATTEMPTS; i++) {
      expect(await outboxRow(db, key)).toMatchObject({ status: 'pending', attempts: i, outcome_unknown: true });
      await laterRound();
    }
    expect(await outboxRow(db, key)).toMatchObject({
      status: 'unresolved',
      attempts: MAX_ATTEMPTS,
      outcome_unknown: true,
      locked_by: null,
    });
    const seen = erp.requests.length;
    expect(seen).toBe(MAX_ATTEMPTS); // one POST, then one outcome query per attempt
    expect(erp.posts(key)).toHaveLength(1);
    t.clock.advance(24 * 3600_000);
    expect(await relay.runOnce()).toBe(0);
    expect(erp.requests.length).toBe(seen);
    expect(erp.effects.size).toBe(0);
  });

  it('scenario 23 (status answers): 500 every time -> unresolved after exactly RELAY_MAX_ATTEMPTS requests', async () => {
    erp.failAlways({ kind: 'status', status: 502 });
    const key = await insertErpRow(db, 'o-23b');
    await relay.runOnce();
    for (let i = 1; i < MAX_ATTEMPTS + 3; i++) await laterRound();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'unresolved', attempts: MAX_ATTEMPTS, last_status_code: 502 });
    expectSameKeyAndBody(erp, key, MAX_ATTEMPTS, false);
  });

  it.each([
    ['seconds', () => '120'],
    ['an HTTP date', () => new Date(Date.now() + 120_000 + 1_000).toUTCString()],
  ])('scenario 24: 429 with Retry-After in %s -> the next attempt waits at least that long', async (_, retryAfter) => {
    // Retry-After as a date is read against the relay's clock, which runs with real time here.
    t.clock.offsetMs = 0;
    erp.failNext(1, { kind: 'status', status: 429, headers: { 'Retry-After': retryAfter() } });
    const key = await insertErpRow(db, 'o-24');
    const before = t.clock.now().getTime();
    await relay.runOnce();
    const row = await outboxRow(db, key);
    expect(row).toMatchObject({ status: 'pending', last_status_code: 429 });
    expect(row.next_attempt_at.getTime()).toBeGreaterThanOrEqual(before + 119_000);
    t.clock.advance(110_000);
    expect(await relay.runOnce()).toBe(0);
    t.clock.advance(12_000);
    expect(await relay.runOnce()).toBe(1);
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
    expectSameKeyAndBody(erp, key, 2);
  });

  it('does not start a send the lease could not cover: the entry waits for the next round, its attempt given back', async () => {
    // Email runs 8 requests at a time: the 9th waits for a slot, and by then the round's lease is nearly over.
    const keys: string[] = [];
    for (let i = 0; i < 9; i++) keys.push(await insertEmailRow(db, `o-late-${i}`));
    email.policy = () => {
      t.clock.advance(5_000); // RELAY_LEASE_MS: each slow answer eats the whole lease
      return undefined;
    };
    try {
      await relay.runOnce();
    } finally {
      email.policy = undefined;
    }
    const pending: string[] = [];
    for (const key of keys) if ((await outboxRow(db, key)).status === 'pending') pending.push(key);
    expect(pending).toHaveLength(1);
    const [late] = pending;
    expect(await outboxRow(db, late)).toMatchObject({
      attempts: 0,
      last_error: 'deferred: the round ran out of lease time',
      locked_by: null,
    });
    expect(email.posts(late)).toHaveLength(0);
    await relay.runOnce();
    expect(await outboxRow(db, late)).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('409 (already done) -> delivered', async () => {
    erp.failNext(1, { kind: 'status', status: 409 });
    const key = await insertErpRow(db, 'o-409');
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', last_status_code: 409 });
  });

  it('400 -> dead, never retried', async () => {
    erp.failNext(1, { kind: 'status', status: 400 });
    const key = await insertErpRow(db, 'o-400');
    await relay.runOnce();
    expect(await outboxRow(db, key)).toMatchObject({ status: 'dead', last_status_code: 400, last_error: 'HTTP 400' });
    expect(await laterRound()).toBe(0);
    expect(erp.posts(key)).toHaveLength(1);
  });

  it('a relay that lost its lease cannot record an outcome', async () => {
    erp.failNext(1, { kind: 'hold' });
    const key = await insertErpRow(db, 'o-fence');
    const round = relay.runOnce();
    await erp.waitForRequests(1);
    // Meanwhile the lease passed to another relay (as after an expiry).
    await db.query(`UPDATE outbox SET locked_by = 'other-relay', attempts = attempts + 1 WHERE operation_key = $1`, [key]);
    erp.release(400); // would make the entry dead if the write were not fenced
    await round;
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivering', locked_by: 'other-relay', last_status_code: null });
    expect(t.logs.text()).toContain('lease lost');
  });

  it('holds no transaction or row lock while a request is in flight', async () => {
    erp.failNext(1, { kind: 'hold' });
    const key = await insertErpRow(db, 'o-nolock');
    const round = relay.runOnce();
    await erp.waitForRequests(1);
    // NOWAIT fails at once if any session holds the row lock.
    await db.query('BEGIN');
    await db.query('SELECT id FROM outbox WHERE operation_key = $1 FOR UPDATE NOWAIT', [key]);
    await db.query('ROLLBACK');
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
    );
    expect(n).toBe(0);
    erp.release(200);
    await round;
    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
  });

  it('two relays on one backlog deliver each key exactly once', async () => {
    // Leases compare instance clocks: instances share time (NTP), so they share the test clock.
    // A generous timeout: a slow answer under CI load must not turn into a (legitimate) retry here.
    const relaxed = { ...env(), RELAY_TIMEOUT_MS: '10000', RELAY_LEASE_MS: '30000' };
    // Back to real time first: a start checks its clock against PostgreSQL's.
    t.clock.offsetMs = 0;
    const one = await startTestApp({ databaseUrl: db.url, env: relaxed, clock: t.clock });
    const other = await startTestApp({ databaseUrl: db.url, env: relaxed, clock: t.clock });
    try {
      const keys: string[] = [];
      for (let i = 0; i < 150; i++) {
        keys.push(await insertErpRow(db, `bulk-${i}`));
        keys.push(await insertEmailRow(db, `bulk-${i}`));
      }
      const claimed = [0, 0];
      const drain = async (r: OutboxRelay, slot: number) => {
        for (let n = await r.runOnce(); n > 0; n = await r.runOnce()) claimed[slot] += n;
      };
      await Promise.all([drain(one.app.get(OutboxRelay), 0), drain(other.app.get(OutboxRelay), 1)]);
      expect(claimed[0]).toBeGreaterThan(0);
      expect(claimed[1]).toBeGreaterThan(0);
      expect(claimed[0] + claimed[1]).toBe(300);
      const [{ delivered }] = await db.query(`SELECT count(*)::int AS delivered FROM outbox WHERE status = 'delivered'`);
      expect(delivered).toBe(300);
      for (const key of keys) {
        const fake = key.startsWith('erp:') ? erp : email;
        expect(fake.posts(key)).toHaveLength(1);
      }
      expect(erp.effects.size + email.effects.size).toBe(300);
    } finally {
      await one.close();
      await other.close();
    }
  });
});

describe('dev mode (no ERP_URL / EMAIL_URL)', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({}, (started) => ({ db, t } = started));

  it('delivers to the built-in dev sink and logs keys, never payloads', async () => {
    const erpKey = await insertErpRow(db, 'dev-1');
    const emailKey = await insertEmailRow(db, 'dev-1');
    expect(await t.app.get(OutboxRelay).runOnce()).toBe(2);
    expect(await outboxRow(db, erpKey)).toMatchObject({ status: 'delivered' });
    expect(await outboxRow(db, emailKey)).toMatchObject({ status: 'delivered' });
    const logs = t.logs.text();
    expect(logs).toContain(erpKey);
    expect(logs).toContain('dev sink');
    expect(logs).not.toContain('buyer-dev-1@example.com');
  });
});
