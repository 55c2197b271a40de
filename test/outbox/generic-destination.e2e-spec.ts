import { Module } from '@nestjs/common';
import { DeliveryOptions, DeliveryResult, DestinationFor, OperationOutcome, OutboxEntry } from '../../src/outbox/destinations/destination';
import { HttpDestination } from '../../src/outbox/destinations/http-destination';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { outboxRow } from './outbox-rows';

/**
 * A destination a team adds, written here in the test module the way
 * docs/extending.md says: one class and one registration line, and nothing
 * in src/config/ knows about it.
 */
@DestinationFor('loyalty', { concurrency: 2 })
class LoyaltyDestination extends HttpDestination {
  deliver(entry: OutboxEntry, options: DeliveryOptions): Promise<DeliveryResult> {
    return this.post(
      '/events',
      entry,
      () => JSON.stringify({ customerId: entry.payload.customerId, paidAt: entry.payload.paidAt }),
      options,
    );
  }

  async queryOutcome(key: string, options: DeliveryOptions): Promise<OperationOutcome> {
    const status = await this.getStatus(`/events/${encodeURIComponent(key)}`, options);
    return status === 200 ? 'applied' : status === 404 ? 'not_applied' : 'unknown';
  }
}

@Module({ providers: [LoyaltyDestination] })
class LoyaltyModule {}

const LOYALTY_TOKEN = 'loyalty-token-from-a-named-variable';

describe('a destination added by a test module, configured by DESTINATION_LOYALTY_*', () => {
  let db: TestDatabase;
  let loyalty: FakeDestination;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp | undefined;

  // Production: no inline secrets, no generated token, every registered destination needs its URL.
  const production = () => ({
    NODE_ENV: 'production',
    ROLES: 'relay',
    ERP_URL: erp.url,
    EMAIL_URL: email.sendUrl,
    RELAY_TIMEOUT_MS: '800',
    RELAY_LEASE_MS: '5000',
    RETRY_BASE_MS: '1000',
    RETRY_MAX_MS: '1000',
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    loyalty = await new FakeDestination('/events', '/events/', { bearer: LOYALTY_TOKEN }).start();
    erp = await startFakeErp();
    email = await startFakeEmail();
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([loyalty.close(), erp.close(), email.close()]);
    await db.drop();
  });

  it('production refuses to start without its URL, naming the variable', async () => {
    await expect(startTestApp({ databaseUrl: db.url, imports: [LoyaltyModule], env: production() })).rejects.toThrow(
      'DESTINATION_LOYALTY_URL: required when NODE_ENV=production (destination "loyalty" is registered)',
    );
  });

  it('settings for a destination nobody registered stop the start', async () => {
    await expect(startTestApp({ databaseUrl: db.url, env: { ...production(), DESTINATION_LOYALTY_URL: loyalty.url } })).rejects.toThrow(
      /^DESTINATION_LOYALTY_\*: no destination "loyalty" is registered/,
    );
  });

  it('starts in production with its URL and token, delivers under the key, and resolves an unknown outcome on its own query path', async () => {
    t = await startTestApp({
      databaseUrl: db.url,
      imports: [LoyaltyModule],
      env: { ...production(), DESTINATION_LOYALTY_URL: loyalty.url, DESTINATION_LOYALTY_BEARER_ENV: 'LOYALTY_TOKEN', LOYALTY_TOKEN },
    });
    expect(t.config.production).toBe(true);
    const key = 'loyalty:customer-paid:acme:o1';
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
       VALUES ($1, 'loyalty', 'customer.paid', 'acme', $2, now() - interval '1 second')`,
      [key, JSON.stringify({ customerId: 'c-1', paidAt: '2026-12-01T10:00:00Z' })],
    );
    // The first answer is lost after the LOYALTY applied it: the next round asks GET /events/<key> before any resend.
    loyalty.failNext(1, { kind: 'applyThenHang' });
    await t.app.get(OutboxRelay).runOnce();
    await waitFor('the first attempt to time out', async () => {
      const row = await outboxRow(db, key);
      return row.status === 'pending' && row.outcome_unknown;
    });
    expect(await outboxRow(db, key)).toMatchObject({ attempts: 1 });
    t.clock.advance(1000);
    await t.app.get(OutboxRelay).runOnce();

    expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
    expect(loyalty.posts(key)).toHaveLength(1);
    expect(loyalty.queries(key)).toHaveLength(1);
    expect(loyalty.requests.every((r) => r.headers.authorization === `Bearer ${LOYALTY_TOKEN}`)).toBe(true);
    expect(loyalty.effects.get(key)).toBe('{"customerId":"c-1","paidAt":"2026-12-01T10:00:00Z"}');
    expect(loyalty.refused).toBe(0);
    expect(t.logs.text()).not.toContain(LOYALTY_TOKEN);
  });
});
