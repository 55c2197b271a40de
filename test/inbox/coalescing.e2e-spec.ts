import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { ENDPOINTS, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

/** An unhandled type: the worker settles it `ignored` (no_handler), which is all these tests need. */
const event = (id: string) => paymentIntentEvent('test.coalesce', { orderId: id, id });
const GAP_MS = 1_000;

describe('worker wake-ups coalesce (WORKER_COALESCE_MS)', () => {
  let db: TestDatabase;
  let t: TestApp;
  const leaseOf = async (eventId: string): Promise<string | undefined> => {
    const [row] = await db.query(
      `SELECT a.lease FROM webhook_inbox_attempts a JOIN webhook_inbox i ON i.id = a.inbox_id WHERE i.event_id = $1`,
      [eventId],
    );
    return row?.lease;
  };
  const settled = (eventId: string) => waitFor(`${eventId} settled`, async () => (await leaseOf(eventId)) !== undefined, GAP_MS * 5);

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { WORKER_COALESCE_MS: String(GAP_MS) } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('claims at once after a quiet spell, then gathers the wake-ups of the gap into one claim', async () => {
    await postStripe(t, event('evt_first'));
    const woken = Date.now();
    worker(t).wake();
    await settled('evt_first');
    expect(Date.now() - woken).toBeLessThan(GAP_MS * 0.75);

    for (const id of ['evt_a', 'evt_b', 'evt_c']) {
      await postStripe(t, event(id));
      worker(t).wake();
    }
    await Promise.all(['evt_a', 'evt_b', 'evt_c'].map(settled));
    const leases = await Promise.all(['evt_first', 'evt_a', 'evt_b', 'evt_c'].map(leaseOf));
    expect(new Set(leases.slice(1)).size).toBe(1);
    expect(leases[1]).not.toBe(leases[0]);
  });

  it('a claim that came back full is followed at once, not after the gap', async () => {
    await new Promise((r) => setTimeout(r, GAP_MS)); // a quiet spell: the first claim starts at once
    // Three full claims and a last one (8 lanes x 64 with this pool), pending from the start: waiting
    // out the gap after each full claim would take three gaps.
    await db.query(
      `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sha256, verified_with, status)
       SELECT 'acme:stripe:platform:test', 'evt_backlog_' || g, 'acme', 'stripe', 'stripe-acme', 'test.coalesce', '{}'::jsonb, repeat('0', 64), 'test', 'pending'
         FROM generate_series(1, 1600) g`,
    );
    const started = Date.now();
    await worker(t).drain();
    expect(Date.now() - started).toBeLessThan(2.5 * GAP_MS);
    const [{ open }] = await db.query(`SELECT count(*)::int AS open FROM webhook_inbox WHERE status IN ('pending', 'processing')`);
    expect(open).toBe(0);
  });
});
