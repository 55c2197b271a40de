import { join } from 'node:path';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination } from '../support/fake-destinations';
import { runTsChild } from '../support/child-process';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestAppWithDestinations } from '../support/test-app';
import { insertEmailRow, insertErpRow, outboxRow } from './outbox-rows';

const LEASE_MS = 60_000;

const runRelayChild = (args: string[]) => runTsChild(join(__dirname, 'relay-child.ts'), args);

describe('scenario 22: a relay process killed after the 200, before recording', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;

  useTestAppWithDestinations({ env: { RELAY_LEASE_MS: String(LEASE_MS) } }, (started) => ({ db, t, erp, email } = started));

  it('the next relay finishes the job after the lease expires; each destination applied the operation once', async () => {
    const erpKey = await insertErpRow(db, 'o-22');
    const emailKey = await insertEmailRow(db, 'o-22');

    const child = await runRelayChild([db.url, erp.url, email.sendUrl]);
    expect(child.output).toContain('dying before recording');
    expect(child.signal).toBe('SIGKILL');

    // Both destinations applied, yet the rows still say delivering under the dead relay's lease.
    expect(erp.effects.has(erpKey)).toBe(true);
    expect(email.effects.has(emailKey)).toBe(true);
    for (const key of [erpKey, emailKey]) {
      const row = await outboxRow(db, key);
      expect(row).toMatchObject({ status: 'delivering', attempts: 1 });
      expect(row.locked_by).toMatch(/:\d+:/);
    }

    const relay = t.app.get(OutboxRelay);
    expect(await relay.runOnce()).toBe(0); // the lease still protects the rows
    t.clock.advance(LEASE_MS + 1);
    expect(await relay.runOnce()).toBe(2);

    for (const key of [erpKey, emailKey]) {
      expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered', attempts: 2, outcome_unknown: false, locked_by: null });
    }
    // ERP: the outcome query said applied, so no second POST.
    expect(erp.queries(erpKey)).toHaveLength(1);
    expect(erp.posts(erpKey)).toHaveLength(1);
    // Email (no outcome query): resent under the same key with the same bytes; the API deduplicated it.
    const sends = email.posts(emailKey);
    expect(sends).toHaveLength(2);
    expect(sends.map((r) => r.headers['idempotency-key'])).toEqual([emailKey, emailKey]);
    expect(sends[1].body).toBe(sends[0].body);
    expect(erp.effects.size).toBe(1);
    expect(email.effects.size).toBe(1);
  });
});
