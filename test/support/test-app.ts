import { ModuleMetadata } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../../src/app.factory';
import { AppConfig } from '../../src/config/app-config';
import { urlVariable } from '../../src/config/destinations';
import { Env, loadConfig } from '../../src/config/load-config';
import { appDestinations } from './app-destinations';
import { CapturingLogger } from './capturing-logger';
import { FakeDestination, startFakeEmail, startFakeErp } from './fake-destinations';
import { FakeClock } from './fake-clock';
import { createTestDatabase, TestDatabase } from './test-database';

export const OPERATOR_TOKEN = 'test-operator-token-0123456789';
export const VIEWER_TOKEN = 'test-viewer-token-0123456789';

export interface TestApp {
  app: NestExpressApplication;
  /** http://127.0.0.1:<port> */
  url: string;
  config: AppConfig;
  logs: CapturingLogger;
  clock: FakeClock;
  close(): Promise<void>;
}

export interface TestAppOptions {
  databaseUrl: string;
  /** The endpoints file's `endpoints` array. */
  endpoints?: unknown[];
  /** The endpoints file's `tenants` array (their worker limits), when given. */
  tenants?: unknown[];
  /** Extra environment (ROLES defaults to "api" so background loops stay off unless asked for). */
  env?: Env;
  imports?: ModuleMetadata['imports'];
  clock?: FakeClock;
  /** Tracing on, every finished span handed to this exporter (e.g. an InMemorySpanExporter). */
  spanExporter?: SpanExporter;
  /** 'pino': the production logger (JSON lines on stdout) instead of the capturing one, whose `logs` then stay empty. */
  logger?: 'pino';
}

/** Writes an endpoints file and starts the real application on a free port. */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'wi-test-'));
  const endpointsFile = join(dir, 'endpoints.json');
  writeFileSync(
    endpointsFile,
    JSON.stringify({ endpoints: options.endpoints ?? [], ...(options.tenants && { tenants: options.tenants }) }),
  );
  const env: Env = {
    NODE_ENV: 'test',
    DATABASE_URL: options.databaseUrl,
    WEBHOOK_ENDPOINTS_FILE: endpointsFile,
    LOG_LEVEL: 'warn',
    ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN}`,
    ROLES: 'api',
    DATABASE_POOL_SIZE: '10',
    ...options.env,
  };
  let config = loadConfig(env);
  if (config.production) {
    // Production wants a URL for every registered destination; the app's own get an address that is never called.
    const missing = appDestinations(config).filter((name) => !config.destinations.get(name)?.url);
    if (missing.length > 0)
      config = loadConfig({ ...env, ...Object.fromEntries(missing.map((n) => [urlVariable(n), `https://${n}.invalid/`])) });
  }
  const logs = new CapturingLogger();
  const clock = options.clock ?? new FakeClock();
  const app = await createApp(config, {
    logger: options.logger ?? logs,
    imports: options.imports,
    clock,
    spanExporter: options.spanExporter,
  });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    config,
    logs,
    clock,
    close: () => app.close(),
  };
}

/**
 * The usual setup of a describe block: before its tests, a database of its own
 * and the application on it (`options` may be a function, read then, when it
 * needs what an earlier beforeAll started); both closed after them. `use` hands
 * the pair to the block's variables.
 */
export function useTestApp(
  options: Omit<TestAppOptions, 'databaseUrl'> | (() => Omit<TestAppOptions, 'databaseUrl'>),
  use: (started: { db: TestDatabase; t: TestApp }) => void,
): void {
  let db: TestDatabase | undefined;
  let t: TestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ ...(typeof options === 'function' ? options() : options), databaseUrl: db.url });
    use({ db, t });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });
}

export interface FakeDestinations {
  erp: FakeDestination;
  email: FakeDestination & { sendUrl: string };
}

/**
 * useTestApp with a fake ERP and a fake email API, started first (the app gets
 * their URLs as ERP_URL and EMAIL_URL) and closed after the app.
 */
export function useTestAppWithDestinations(
  options: Omit<TestAppOptions, 'databaseUrl'>,
  use: (started: { db: TestDatabase; t: TestApp } & FakeDestinations) => void,
): void {
  let db: TestDatabase | undefined;
  let t: TestApp | undefined;
  const fakes: Partial<FakeDestinations> = {};
  beforeAll(async () => {
    db = await createTestDatabase();
    const erp = (fakes.erp = await startFakeErp());
    const email = (fakes.email = await startFakeEmail());
    t = await startTestApp({ ...options, env: { ERP_URL: erp.url, EMAIL_URL: email.sendUrl, ...options.env }, databaseUrl: db.url });
    use({ db, t, erp, email });
  });
  afterAll(async () => {
    await t?.close();
    await fakes.erp?.close();
    await fakes.email?.close();
    await db?.drop();
  });
}
