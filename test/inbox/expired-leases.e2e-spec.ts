import { InboxRepository } from '../../src/inbox/inbox.repository';
import { WorkerLimits } from '../../src/inbox/worker-limits';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { burst, ENDPOINTS } from './worker-fixtures';

const LEASE_MS = 30_000;
const endpoint = (id: string, tenantId: string) => ({ ...ENDPOINTS[0], id, tenantId });

/**
 * A crashed worker's rows (processing, lease expired) are taken back by the next claim even
 * while another tenant's backlog fills every claim: otherwise they wait for the backlog to
 * end, and under a concurrency limit hold their tenant's places all that time.
 */
describe('expired leases ahead of a backlog', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [endpoint('stripe-acme', 'acme'), endpoint('stripe-bravo', 'bravo')],
      tenants: [{ id: 'acme', limits: { concurrency: 1 } }],
      env: { WORKER_LEASE_MS: String(LEASE_MS) },
    },
    (started) => ({ db, t } = started),
  );
  beforeEach(async () => {
    await db.query(`DELETE FROM webhook_inbox`);
    await burst(db, 'acme', 3);
    await burst(db, 'bravo', 300);
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', locked_by = 'dead-worker:1', locked_until = now() - interval '10 minutes'
        WHERE id = (SELECT min(id) FROM webhook_inbox WHERE tenant_id = 'acme')`,
    );
  });
  const crashed = async () =>
    (await db.query(`SELECT locked_by, attempts, last_error FROM webhook_inbox WHERE tenant_id = 'acme' ORDER BY id LIMIT 1`))[0];

  it('the plain claim takes the expired row first', async () => {
    const claimed = await t.app.get(InboxRepository).claim('w:plain', t.clock.now(), 64, LEASE_MS);
    expect(claimed).toHaveLength(64);
    expect(await crashed()).toEqual({ locked_by: 'w:plain', attempts: 1, last_error: 'lease_expired' });
  });

  it('the limited claim takes it too, and the tenant at its limit gets no more', async () => {
    const claimed = await t.app.get(WorkerLimits).claim('w:limited', t.clock.now(), 64, LEASE_MS);
    expect(claimed).toHaveLength(64);
    expect(await crashed()).toMatchObject({ locked_by: 'w:limited' });
    expect(claimed.filter((e) => e.tenantId === 'acme')).toHaveLength(1);
  });
});
