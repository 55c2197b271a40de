import { Module } from '@nestjs/common';
import { DeliveryOptions, DeliveryResult, DestinationFor, OutboxEntry } from '../../src/outbox/destinations/destination';
import { HttpDestination } from '../../src/outbox/destinations/http-destination';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

/** An extension's destination whose client ignores the abort signal and never answers (a97dc73's case). */
let hangerCalls = 0;
@DestinationFor('hanger', { concurrency: 4 })
class HangingDestination extends HttpDestination {
  deliver(_entry: OutboxEntry, _options: DeliveryOptions): Promise<DeliveryResult> {
    hangerCalls++;
    return new Promise<never>(() => undefined);
  }
}
@Module({ providers: [HangingDestination] })
class HangerModule {}

/**
 * A destination that hangs past its timeout, ignoring the abort signal (an extension's), is down
 * for the circuit as an HTTP timeout is. Found by an adversarial review; the test failed before:
 * every claimed entry was sent in one round, and the circuit stayed closed.
 */
describe('relay: a destination that hangs past its timeout', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  let relay: OutboxRelay;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({
      databaseUrl: db.url,
      imports: [HangerModule],
      env: {
        ERP_URL: erp.url,
        EMAIL_URL: email.sendUrl,
        DESTINATION_HANGER_URL: 'http://127.0.0.1:9',
        RELAY_TIMEOUT_MS: '200',
        RELAY_LEASE_MS: '10000',
        RETRY_BASE_MS: '1000',
        RETRY_MAX_MS: '1000',
      },
    });
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
    hangerCalls = 0;
  });

  it('a destination that times out by ignoring its signal counts as down: the circuit bounds its requests', async () => {
    for (let i = 0; i < 40; i++) {
      await db.query(
        `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
         VALUES ($1, 'hanger', 'x', 'acme', '{}', now() - interval '1 second')`,
        [`hanger:${i}`],
      );
    }
    await relay.runOnce();
    const [state] = await db.query(`SELECT circuit, failures FROM outbox_destinations WHERE destination = 'hanger'`);
    // An HTTP destination that hangs stops the round after the circuit's 5 failures in a row (7237222) and opens the circuit.
    expect(state).toMatchObject({ circuit: 'open' });
    expect(hangerCalls).toBeLessThanOrEqual(5 + 4);
  });
});
