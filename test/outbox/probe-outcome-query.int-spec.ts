import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { erpRequestBody } from '../../src/outbox/destinations/erp.destination';
import { FakeClock } from '../support/fake-clock';
import { FakeDestination } from '../support/fake-destinations';
import { TestApp, useTestAppWithDestinations } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { insertErpRow } from './outbox-rows';

/**
 * After an outage the half-open probe is likely an entry whose outcome is unknown (its send
 * timed out), settled by asking the ERP, not by sending. That answer shows the ERP is up: the
 * circuit closes at once, not a probe lease later.
 */
describe('a half-open probe settled by the outcome query', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let app: TestApp;
  useTestAppWithDestinations(
    {
      clock: new FakeClock(),
      env: { RELAY_TIMEOUT_MS: '800', RELAY_LEASE_MS: '5000', ERP_CIRCUIT_FAILURES: '3', ERP_CIRCUIT_COOLDOWN_MS: '1000' },
    },
    (started) => ({ db, erp, t: app } = started),
  );

  it('the ERP says applied: the entry is delivered and the circuit closed', async () => {
    const key = await insertErpRow(db, 'probe-1');
    const [row] = await db.query<{ id: string; payload: Record<string, unknown> }>(
      `SELECT id, payload FROM outbox WHERE operation_key = $1`,
      [key],
    );
    // The earlier attempt timed out after the ERP applied it.
    await db.query(`UPDATE outbox SET outcome_unknown = true, attempts = 1 WHERE id = $1`, [row.id]);
    erp.effects.set(
      key,
      erpRequestBody({
        id: row.id,
        operationKey: key,
        destination: 'erp',
        operationType: 'order.paid',
        tenantId: 'acme',
        payload: row.payload,
        attempts: 1,
        outcomeUnknown: true,
        aggregate: null,
      }),
    );
    await db.query(`INSERT INTO outbox_destinations (destination) VALUES ('erp'), ('email') ON CONFLICT DO NOTHING`);
    await db.query(
      `UPDATE outbox_destinations SET circuit = 'open', failures = 3, retry_at = now() - interval '1 second' WHERE destination = 'erp'`,
    );

    await app.app.get(OutboxRelay).runOnce();

    expect((await db.query(`SELECT status FROM outbox WHERE id = $1`, [row.id]))[0].status).toBe('delivered');
    expect((await db.query(`SELECT circuit FROM outbox_destinations WHERE destination = 'erp'`))[0].circuit).toBe('closed');
  });
});
