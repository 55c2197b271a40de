import { NestExpressApplication } from '@nestjs/platform-express';
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createApp } from '../../src/app.factory';
import { loadConfig } from '../../src/config/load-config';
import { OPERATOR_TOKEN } from '../support/test-app';
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
    const endpointsFile = join(mkdtempSync(join(tmpdir(), 'wi-logger-')), 'endpoints.json');
    writeFileSync(endpointsFile, JSON.stringify({ endpoints: [] }));
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      WEBHOOK_ENDPOINTS_FILE: endpointsFile,
      // Request lines are info: none reach the test's output.
      LOG_LEVEL: 'warn',
      ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN}`,
      ROLES: 'api',
    });
    const app: NestExpressApplication = await createApp(config, { logger: 'pino' });
    await app.listen(0, '127.0.0.1');
    const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
    const enterWith = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');
    try {
      const server = app.getHttpServer();
      expect((await request(server).get('/health/live')).status).toBe(200);
      expect((await request(server).get('/admin/inbox').set({ Authorization: `Bearer ${OPERATOR_TOKEN}` })).status).toBe(200);
      expect((await request(server).get('/admin/inbox')).status).toBe(401);
      expect(run).not.toHaveBeenCalled();
      expect(enterWith).not.toHaveBeenCalled();
    } finally {
      run.mockRestore();
      enterWith.mockRestore();
      await app.close();
    }
  });
});
