import { Module } from '@nestjs/common';
import { DeliveryOptions, DeliveryResult, DestinationFor, OutboxEntry } from '../../src/outbox/destinations/destination';
import { HttpDestination } from '../../src/outbox/destinations/http-destination';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { TestDatabase } from '../support/test-database';
import { useTestAppWithDestinations } from '../support/test-app';

/** An extension's destination whose client ignores the abort signal and never answers (a97dc73's case). */
let hangerCalls = 0;
@DestinationFor('hanger', { concurrency: 4 })
class HangingDestination extends HttpDestination {
  deliver(_entry: OutboxEntry, _options: DeliveryOptions): Promise<DeliveryResult> {
    hangerCalls++;
    return new Promise<never>(() => undefined);
  }
}
/** An extension's destination that throws on every entry (a bug, or one tenant's malformed payloads). */
let throwerCalls = 0;
@DestinationFor('thrower', { concurrency: 4 })
class ThrowingDestination extends HttpDestination {
  deliver(_entry: OutboxEntry, _options: DeliveryOptions): Promise<DeliveryResult> {
    throwerCalls++;
    throw new TypeError("Cannot read properties of undefined (reading 'amount')");
  }
}
@Module({ providers: [HangingDestination, ThrowingDestination] })
class HangerModule {}

/**
 * A destination that hangs past its timeout, ignoring the abort signal (an extension's), is down
 * for the circuit as an HTTP timeout is. Found by an adversarial review; the test failed before:
 * every claimed entry was sent in one round, and the circuit stayed closed.
 */
describe('relay: a destination that hangs past its timeout', () => {
  let db: TestDatabase;
  let relay: OutboxRelay;
  useTestAppWithDestinations(
    {
      imports: [HangerModule],
      env: {
        DESTINATION_HANGER_URL: 'http://127.0.0.1:9',
        DESTINATION_THROWER_URL: 'http://127.0.0.1:9',
        RELAY_TIMEOUT_MS: '200',
        RELAY_LEASE_MS: '10000',
        RETRY_BASE_MS: '1000',
        RETRY_MAX_MS: '1000',
      },
    },
    (started) => {
      db = started.db;
      relay = started.t.app.get(OutboxRelay);
    },
  );
  beforeEach(async () => {
    await db.query('DELETE FROM outbox');
    await db.query('DELETE FROM outbox_destinations');
    hangerCalls = 0;
    throwerCalls = 0;
  });

  const insertEntries = async (destination: string, n: number) => {
    for (let i = 0; i < n; i++) {
      await db.query(
        `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, next_attempt_at)
         VALUES ($1, $2, 'x', 'acme', '{}', now() - interval '1 second')`,
        [`${destination}:${i}`, destination],
      );
    }
  };

  it('a destination that times out by ignoring its signal counts as down: the circuit bounds its requests', async () => {
    await insertEntries('hanger', 40);
    await relay.runOnce();
    const [state] = await db.query(`SELECT circuit, failures FROM outbox_destinations WHERE destination = 'hanger'`);
    // An HTTP destination that hangs stops the round after the circuit's 5 failures in a row (7237222) and opens the circuit.
    expect(state).toMatchObject({ circuit: 'open' });
    expect(hangerCalls).toBeLessThanOrEqual(5 + 4);
  });

  it('a destination that throws is not down: its circuit stays closed, and every entry is retried later', async () => {
    await insertEntries('thrower', 20);
    await relay.runOnce();
    expect(throwerCalls).toBe(20);
    const [state] = await db.query(`SELECT circuit FROM outbox_destinations WHERE destination = 'thrower'`);
    expect(state).toMatchObject({ circuit: 'closed' });
    expect(await db.query(`SELECT DISTINCT status, outcome_unknown FROM outbox WHERE destination = 'thrower'`)).toEqual([
      { status: 'pending', outcome_unknown: true },
    ]);
  });
});
