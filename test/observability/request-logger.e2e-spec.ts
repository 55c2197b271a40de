import { AsyncLocalStorage } from 'node:async_hooks';
import request from 'supertest';
import { OPERATOR_TOKEN, startTestApp } from '../support/test-app';
import { TestDatabase, useTestDatabase } from '../support/test-database';

/**
 * The production logger (pino) never runs a request inside AsyncLocalStorage: on Node 20 the first
 * store entered turns on async hooks for the whole process, and every promise, timer and socket of
 * the hot paths pays for them from then on (docs/performance.md). Its request lines are checked on
 * the real process in log-leak.e2e-spec.ts.
 */
describe('production logger', () => {
  let db: TestDatabase;
  useTestDatabase((created) => (db = created));

  it('serves Nest requests without entering an AsyncLocalStorage (tracing off)', async () => {
    // LOG_LEVEL warn (the test app's): request lines are info, none reach the test's output.
    const t = await startTestApp({ databaseUrl: db.url, logger: 'pino' });
    const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
    const enterWith = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');
    try {
      expect((await request(t.url).get('/health/live')).status).toBe(200);
      expect(
        (
          await request(t.url)
            .get('/admin/inbox')
            .set({ Authorization: `Bearer ${OPERATOR_TOKEN}` })
        ).status,
      ).toBe(200);
      expect((await request(t.url).get('/admin/inbox')).status).toBe(401);
      expect(run).not.toHaveBeenCalled();
      expect(enterWith).not.toHaveBeenCalled();
    } finally {
      run.mockRestore();
      enterWith.mockRestore();
      await t.close();
    }
  });
});
