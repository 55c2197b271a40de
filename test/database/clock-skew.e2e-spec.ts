import { TestDatabase, useTestDatabase } from '../support/test-database';
import { FakeClock } from '../support/fake-clock';
import { startTestApp } from '../support/test-app';

/** An instance whose clock is off would take over leases others still hold (or keep its own too long). */
describe('clock skew against PostgreSQL', () => {
  let db: TestDatabase;
  useTestDatabase((created) => (db = created));

  it.each([
    ['ahead', 5 * 60_000],
    ['behind', -5 * 60_000],
  ])('refuses to start with a clock minutes %s', async (direction, offsetMs) => {
    const clock = new FakeClock();
    clock.offsetMs = offsetMs;
    await expect(startTestApp({ databaseUrl: db.url, clock })).rejects.toThrow(
      new RegExp(`clock skew: this host's clock is \\d+ ms ${direction}`),
    );
  });

  it('starts within a quarter of the shortest lease', async () => {
    const clock = new FakeClock();
    clock.offsetMs = 2_000; // default leases: 30 s (worker), 60 s (relay)
    const t = await startTestApp({ databaseUrl: db.url, clock });
    await t.close();
  });
});
