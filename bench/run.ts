/**
 * npm run bench [-- --quick]
 * One run, every stage side by side on the same PostgreSQL (DATABASE_URL, else
 * an embedded one), printed as a table and saved under bench/results/.
 * Throughput is reported as a ratio to a reference measured in the same round:
 * ingestion and relay to pgbench -M prepared inserting into a copy of the inbox
 * table, the worker drain and graphile-worker to the drain's own statements run
 * with no service in between (bench/lib/drain-bound.ts); with --floor, end to end beside
 * the same statements and exchanges run from a bare process (bench/lib/e2e-floor.ts). With --aged,
 * the stages against a month of history beside an empty database (bench/lib/aged.ts, --squeeze,
 * --aged-retention; docs/performance.md "At month scale"). --only=retention-rate: the retention job's clearing
 * rate beside a plain DELETE loop over the same expired rows (bench/lib/retention-rate.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JobHelpers } from 'graphile-worker';
import { Client, Pool as PgPool } from 'pg';
import { Pool } from 'undici';
import { signRequest } from '../src/cli/sign-request';
import {
  drainOutcome,
  freshDatabase,
  migrate,
  seedOrders,
  seedPaymentBacklog,
  startServer,
  waitForCount,
  waitUntilNone,
  withClient,
  BenchServer,
} from './lib/database';
import {
  BENCH_STRIPE_SECRET,
  BENCH_TOKEN,
  childrenCpuMs,
  machineBusyMs,
  postgresCpuByRole,
  postgresCpuMs,
  postgresWrites,
  startService,
} from './lib/service';
import { Sink } from './lib/sink';
import { FakeCollector } from './lib/collector';
import { median, round, summarize } from './lib/stats';
import { StatementShare, StatementStats } from './lib/statements';
import { runLoad, serialize } from './lib/http-load';
import { loopbackRoundTrip } from './lib/machine';
import { CLAIM, LIMITED_CLAIM } from '../src/inbox/inbox.queries';
import { drainBound } from './lib/drain-bound';
import { KeyRing } from '../src/crypto/key-ring';
import { InboxPayloads } from '../src/inbox/inbox-payloads';
import { randomBytes } from 'node:crypto';
import { payload } from './lib/stripe-payload';
import { StripeEventsApi } from './lib/stripe-events-api';
import { AgedParams, agedHistory, agedParams, ensureAged } from './lib/aged';
import { describeCost, StorageCost, StorageProbe } from './lib/probe';
import { Squeeze } from './lib/squeeze';
import { DELETE_IDENTITIES, PURGE_PAYLOADS } from '../src/inbox/inbox.queries';
import { PRUNE_DELIVERED } from '../src/outbox/outbox.queries';
import { RETENTION_BATCH_SIZE, RETENTION_MAX_BATCHES } from '../src/retention/retention.service';
import { createDataSource } from '../src/database/data-source';
import { PayloadDays } from '../src/inbox/payload-days';
import { clearWithFloor, clearWithJob, describeClearing, PAST_EVERY_WINDOW_DAYS, retentionFill } from './lib/retention-rate';
import {
  describeFlood,
  FLOOD_REQUESTS,
  FLOOD_SECONDS,
  FloodResult,
  LOG_ALL,
  LOG_OFF,
  LOG_ON,
  rejectionFlood,
  VALID_PER_SECOND,
} from './lib/rejection-flood';

/** One key ring for the encryption stages: the service gets it as PAYLOAD_KEYS, the drain's seeding seals with it. */
const BENCH_KEY = { id: 'bench', key: randomBytes(32) };
const ENCRYPTION_ON = { PAYLOAD_KEYS: `${BENCH_KEY.id}:${BENCH_KEY.key.toString('base64')}` };

const quick = process.argv.includes('--quick');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (stage: string) => !only || only.includes(stage);
const SIZES = quick
  ? { seconds: 5, ingest: 6_000, drain: 10_000, graphile: 20_000, relay: 4_000, e2eSeconds: 5, settledRows: 100_000 }
  : { seconds: 10, ingest: 30_000, drain: 20_000, graphile: 50_000, relay: 20_000, e2eSeconds: 15, settledRows: 1_000_000 };

interface Row {
  stage: string;
  value: number;
  unit: string;
  ratio?: number;
  /** A reference the round's other stages are a ratio of. */
  reference?: boolean;
  notes?: string;
  /** With --statements: PostgreSQL's execution time per event or request, by statement. */
  statements?: StatementShare[];
}
/** Every sample of each stage, in first-seen order; the table shows the median round. */
const samples = new Map<string, Row[]>();
const rows = {
  push(row: Row): void {
    samples.set(row.stage, [...(samples.get(row.stage) ?? []), row]);
  },
};
const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice('--rounds='.length) ?? (quick ? 1 : 3));
const log = (line: string) => process.stderr.write(`${line}\n`);
const withStatements = process.argv.includes('--statements');
let statements: StatementStats;

/**
 * --tracing: the drain, relay and end-to-end stages once per variant, side by side in
 * each round: tracing off, on at sampling ratios 1.0 and 0.01 (exporting to a local
 * fake collector), and, with BENCH_BEFORE_MAIN=<another build's dist/src/main.js>, the
 * build before tracing existed.
 */
interface Variant {
  label: string;
  env: Record<string, string>;
  mainJs?: string;
  /** The drain's backlog is seeded parked and released at once (the encryption stage seals it in between). */
  parked?: boolean;
}
const tracingBench = process.argv.includes('--tracing');
let collector: FakeCollector | undefined;
const OFF: Variant = { label: '', env: {} };

/** --quiet-ab: the production defaults beside the settings the bench used until issue 38 (development mode, LOG_LEVEL=warn). */
const QUIET: Variant = {
  label: 'NODE_ENV=development, LOG_LEVEL=warn (the bench before issue 38)',
  env: { NODE_ENV: 'development', LOG_LEVEL: 'warn' },
};
const PRODUCTION: Variant = { label: 'production defaults (NODE_ENV=production, LOG_LEVEL=info)', env: {} };

function variants(): Variant[] {
  if (process.argv.includes('--quiet-ab')) return [PRODUCTION, QUIET];
  const before = process.env.BENCH_BEFORE_MAIN;
  // Another build beside this one, alternating in each round: an A/B of a change in one run.
  if (!tracingBench)
    return before
      ? [
          { label: 'before', env: {}, mainJs: before },
          { label: 'after', env: {} },
        ]
      : [OFF];
  const on = (ratio: string): Record<string, string> => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: collector!.url,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: ratio,
  });
  return [
    ...(before ? [{ label: 'before tracing', env: {}, mainJs: before }] : []),
    { label: 'tracing off', env: {} },
    { label: 'tracing on, ratio 1.0', env: on('1') },
    { label: 'tracing on, ratio 0.01', env: on('0.01') },
  ];
}

/**
 * --floor: beside the end-to-end run, the same SQL and exchanges with no application in between
 * (bench/lib/e2e-floor.ts), alternating with the service in each pass: what this design costs here.
 */
const FLOOR: Variant = {
  label: 'floor: the same statements and exchanges, no application',
  env: { STRIPE_SECRET: BENCH_STRIPE_SECRET },
  mainJs: join(__dirname, 'lib', 'e2e-floor.ts'),
};
const withFloor = process.argv.includes('--floor') && !tracingBench;
const FLOOR_MERGED: Variant = { ...FLOOR, label: 'floor, accepted in the business transaction', env: { ...FLOOR.env, FLOOR_MERGED: '1' } };

const labelled = (stage: string, variant: Variant) => (variant.label ? `${stage} [${variant.label}]` : stage);

/** Per variant: its value over the "tracing off" one of the same round. */
function pushTracingRatios(what: string, values: Map<Variant, number>, unit = 'x'): void {
  const off = [...values].find(([v]) => v.label === 'tracing off')?.[1];
  if (off === undefined) return;
  for (const [variant, value] of values) {
    if (variant.label === 'tracing off') continue;
    rows.push({ stage: `tracing cost: ${what}, ${variant.label} / tracing off`, value: round(value / off, 3), unit });
  }
}

/**
 * The ingestion baseline: pgbench, one INSERT ... ON CONFLICT DO NOTHING per transaction into a
 * copy of the inbox table with its indexes, 16 clients. Each row's payload is spliced around its
 * id, so PostgreSQL parses every row's jsonb as it does the product's. `prepared` (-M prepared)
 * plans once per connection, as the product's own statements do, and is the ratio's reference;
 * the simple protocol re-plans every insert and is kept beside it, labelled.
 */
async function baseline(server: BenchServer, protocol: 'prepared' | 'simple'): Promise<number> {
  const db = await freshDatabase(server);
  try {
    // The scope and payload texts sit in a one-row table: in prepared mode pgbench would read their
    // colons as variables. Each insert splices its id into the payload and casts it, so every row's
    // jsonb is parsed.
    await withClient(db.url, async (c) => {
      await c.query('CREATE TABLE bench_baseline (LIKE webhook_inbox INCLUDING ALL)');
      await c.query('CREATE TABLE bench_payload AS SELECT $1::text AS scope, $2::text AS body', [
        'acme:stripe:platform:test',
        payload('evt_SPLIT', 'o1'),
      ]);
    });
    const script = join(__dirname, 'results', `baseline-${protocol}.pgbench.tmp`);
    writeFileSync(
      script,
      `\\set id random(1, 2000000000)
INSERT INTO bench_baseline (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sha256, verified_with, status) SELECT p.scope, 'evt_' || :id::text || '_' || :client_id::text, 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded', replace(p.body, 'evt_SPLIT', 'evt_' || :id::text)::jsonb, md5(:id::text) || md5(:client_id::text), 'bench', 'pending' FROM bench_payload p ON CONFLICT DO NOTHING;
`,
    );
    let output: string;
    const cpuBefore = { client: childrenCpuMs(), postgres: postgresCpuMs() };
    try {
      output = execFileSync('pgbench', ['-n', '-M', protocol, '-c', '16', '-j', '2', '-T', String(SIZES.seconds), '-f', script, db.url], {
        encoding: 'utf8',
      });
    } catch (error) {
      throw new Error(`pgbench failed: ${(error as Error).message}`);
    }
    const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1]);
    const inserted = Number(/number of transactions actually processed: (\d+)/.exec(output)?.[1]);
    const perRowUs = (ms: number) => round((ms * 1000) / inserted, 0);
    rows.push({
      stage: `baseline: pgbench -M ${protocol}, 1 INSERT ON CONFLICT per commit, 16 clients${protocol === 'simple' ? ' (re-plans every insert; not the reference)' : ''}`,
      value: round(tps, 0),
      unit: 'rows/s',
      ratio: protocol === 'prepared' ? 1 : undefined,
      reference: protocol === 'prepared',
      notes: `CPU per row: pgbench ${perRowUs(childrenCpuMs() - cpuBefore.client)} us, PostgreSQL ${perRowUs(postgresCpuMs() - cpuBefore.postgres)} us`,
    });
    return tps;
  } finally {
    await db.drop();
  }
}

/** The worker's reference: the drain's own statements, frozen in bench/lib/drain-bound.ts, run with no service in between. */
async function workerBound(server: BenchServer): Promise<number> {
  const db = await freshDatabase(server);
  try {
    await seedPaymentBacklog(db.url, 1, SIZES.drain);
    const cpuBefore = { bench: process.cpuUsage(), postgres: postgresCpuMs() };
    const started = performance.now();
    await drainBound(db.url);
    const seconds = (performance.now() - started) / 1000;
    const bench = process.cpuUsage(cpuBefore.bench);
    const { done, effects } = await drainOutcome(db.url);
    const rate = SIZES.drain / seconds;
    rows.push({
      stage: "worker bound: the drain's statements alone (frozen, bench/lib/drain-bound.ts), 8 lanes",
      value: round(rate, 0),
      unit: 'events/s',
      ratio: 1,
      reference: true,
      notes: `${done}/${SIZES.drain} events done -> ${effects} outbox rows; CPU per event: pg client ${round((bench.user + bench.system) / SIZES.drain, 0)} us, PostgreSQL ${round(((postgresCpuMs() - cpuBefore.postgres) * 1000) / SIZES.drain, 0)} us`,
    });
    return rate;
  } finally {
    await db.drop();
  }
}

/** Closed loop: `inFlight` requests outstanding until `count` are sent. */
async function ingestion(server: BenchServer, label: string, env: Record<string, string>, base: number, mainJs?: string): Promise<number> {
  const db = await stageDatabase(server);
  const service = await startService(db.url, { ROLES: 'api', ...env }, mainJs);
  try {
    const count = SIZES.ingest;
    const requests = Array.from({ length: count }, (_, i) => {
      // Random, as a provider's ids are: each insert checks its uniqueness in its own leaf of the identity index.
      const id = `evt_${randomBytes(12).toString('hex')}`;
      return { id, ...signRequest('stripe', BENCH_STRIPE_SECRET, payload(id, `o${i}`)) };
    });
    const wire = serialize(requests.map((r) => ({ path: '/webhooks/stripe-acme', headers: r.headers, body: r.body })));
    await statements.reset();
    const probe = await startProbe(server, db.url);
    const cpuBefore = { service: service.cpuMs(), postgres: postgresCpuMs(), generator: process.cpuUsage() };
    const started = performance.now();
    const stageStart = new Date(Date.now() - 5_000);
    const load = await runLoad(Number(new URL(service.url).port), wire, 64);
    const seconds = (performance.now() - started) / 1000;
    const cost = await probe?.finish(count);
    const cpuPerRequestUs = ((service.cpuMs() - cpuBefore.service) * 1000) / count;
    const postgresPerRequestUs = ((postgresCpuMs() - cpuBefore.postgres) * 1000) / count;
    const generator = process.cpuUsage(cpuBefore.generator);
    const generatorPerRequestUs = (generator.user + generator.system) / count;
    const acked = load.ok.map((i) => requests[i].id);
    const latencies = load.latencies;
    const stored = await withClient(db.url, async (c) => {
      // By the stage's receipt range: no index answers (source_scope, event_id) without the stated time.
      const { rows: found } = await c.query(
        'SELECT count(*)::int AS n FROM webhook_inbox WHERE received_at >= $3 AND source_scope = $2 AND event_id = ANY($1)',
        [acked, BENCH_SCOPE, stageStart],
      );
      return found[0].n as number;
    });
    const rate = acked.length / seconds;
    const { p50, p99 } = summarize(latencies);
    lastMeasure = { value: rate, p50, p99, cpuUs: cpuPerRequestUs + postgresPerRequestUs, cost };
    rows.push({
      stage: `ingestion: ${label}, 64 in flight`,
      value: round(rate, 0),
      unit: 'accepted/s',
      ratio: round(rate / base, 2),
      statements: await statements.top(db.url, count),
      notes: `p50 ${p50} ms, p99 ${p99} ms; CPU per request: service ${round(cpuPerRequestUs, 0)} us, PostgreSQL ${round(postgresPerRequestUs, 0)} us, load generator ${round(generatorPerRequestUs, 0)} us; ${acked.length}/${count} acked${[...load.others].map(([status, n]) => `, ${n} x ${status}`).join('')}, ${stored} of them in the inbox${stored === acked.length ? '' : ' (LOST!)'}${cost ? `; ${describeCost(cost, 'request')}` : ''}`,
    });
    return rate;
  } finally {
    await service.stop();
    await db.drop();
  }
}

async function workerDrain(server: BenchServer, instances: number, base: number, variant: Variant = OFF): Promise<number> {
  const db = await stageDatabase(server);
  const services = await Promise.all(
    Array.from({ length: instances }, () =>
      startService(
        db.url,
        { ROLES: 'worker', WORKER_POLL_MS: '50', DATABASE_POOL_SIZE: process.env.BENCH_POOL ?? '20', ...variant.env },
        variant.mainJs,
      ),
    ),
  );
  try {
    if (variant.parked) {
      // Parked, sealed when the service has a key ring, then released at once: both variants start alike.
      await seedPaymentBacklog(db.url, 1, SIZES.drain, 'quarantined');
      if (variant.env.PAYLOAD_KEYS) await sealBacklog(db.url);
      await withClient(db.url, async (c) => {
        await c.query(`UPDATE webhook_inbox SET status = 'pending' WHERE status = 'quarantined'`);
        await c.query(`SELECT pg_notify('webhook_inbox', NULL)`);
      });
    } else {
      await seedPaymentBacklog(db.url, 1, SIZES.drain);
    }
    await statements.reset();
    const probe = await startProbe(server, db.url);
    const cpuBefore = { service: services.reduce((t, s) => t + s.cpuMs(), 0), postgres: postgresCpuMs() };
    const seconds = await waitUntilNone(db.url, 'webhook_inbox', ['pending', 'processing']);
    const cost = await probe?.finish(SIZES.drain);
    const perEventUs = (ms: number) => round((ms * 1000) / SIZES.drain, 0);
    const serviceUs = perEventUs(services.reduce((t, s) => t + s.cpuMs(), 0) - cpuBefore.service);
    const postgresUs = perEventUs(postgresCpuMs() - cpuBefore.postgres);
    const { done, effects } = await drainOutcome(db.url, db.since);
    const rate = SIZES.drain / seconds;
    lastMeasure = { value: rate, cpuUs: serviceUs + postgresUs, cost };
    rows.push({
      stage: labelled(`worker drain: ${instances} instance${instances > 1 ? 's' : ''}, full business transaction`, variant),
      value: round(rate, 0),
      unit: 'events/s',
      ratio: round(rate / base, 2),
      statements: await statements.top(db.url, SIZES.drain),
      notes: `${done}/${SIZES.drain} events done -> ${effects} outbox rows (expected ${SIZES.drain * 2}); CPU per event: service ${serviceUs} us, PostgreSQL ${postgresUs} us${cost ? `; ${describeCost(cost, 'event')}` : ''}`,
    });
    return rate;
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await db.drop();
  }
}

/** CPU of sealing and of opening (with the parse the worker needs anyway) one ~1 KB payload, in this process. */
function sealingCost(): Row {
  const payloads = new InboxPayloads(new KeyRing([BENCH_KEY]));
  const json = payload('evt_seal', 'o1');
  const n = 20_000;
  const cpu = (f: (i: number) => void) => {
    for (let i = 0; i < 1000; i++) f(i);
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) f(i);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / n;
  };
  const sealed = Array.from({ length: n }, (_, i) => payloads.store('acme:stripe:platform:test', `evt_${i}`, json));
  const seal = cpu((i) => payloads.store('acme:stripe:platform:test', `evt_${i}`, json));
  const open = cpu((i) => payloads.open({ source_scope: 'acme:stripe:platform:test', event_id: `evt_${i}`, ...sealed[i] }));
  const parse = cpu(() => JSON.parse(json));
  return {
    stage: 'payload encryption: CPU per ~1 KB payload (seal; open + parse)',
    value: round(seal, 1),
    unit: 'us seal',
    notes: `open + JSON.parse ${round(open, 1)} us (JSON.parse alone ${round(parse, 1)} us); ${json.length} bytes -> ${sealed[0].payload_sealed!.length} sealed`,
  };
}

/** Seals the seeded backlog's payloads as the accept path would (untimed setup). */
async function sealBacklog(url: string): Promise<void> {
  const payloads = new InboxPayloads(new KeyRing([BENCH_KEY]));
  await withClient(url, async (c) => {
    const { rows: all } = await c.query(
      `SELECT id, source_scope, event_id, payload::text AS text FROM webhook_inbox WHERE payload IS NOT NULL`,
    );
    for (let i = 0; i < all.length; i += 1000) {
      const chunk = all.slice(i, i + 1000);
      await c.query(
        `UPDATE webhook_inbox w SET payload = NULL, payload_sealed = v.sealed, payload_key_id = $3
           FROM unnest($1::bigint[], $2::bytea[]) AS v(id, sealed) WHERE w.id = v.id`,
        [chunk.map((r) => r.id), chunk.map((r) => payloads.store(r.source_scope, r.event_id, r.text).payload_sealed), BENCH_KEY.id],
      );
    }
  });
}

type GraphileMode = 'defaults' | 'batched' | 'business';

const GRAPHILE_STAGES: Record<GraphileMode, string> = {
  defaults: 'no-op jobs, concurrency 10, defaults',
  batched: 'no-op jobs, concurrency 10, localQueue 500 + batched completion',
  business: "the worker drain's business transaction as jobs, batched as above",
};

/**
 * The same business writes as a job, as a team would hand-write them on graphile-worker:
 * one transaction per job (lock the order, transition it, two outbox rows). Its completion
 * commits apart from them, so it is at least once, not exactly once: a reference, not a rival.
 */
async function applyPaymentJob(payload: unknown, helpers: JobHelpers): Promise<void> {
  const { i } = payload as { i: number };
  const order = `o${i}`;
  await helpers.withPgClient(async (c) => {
    await c.query('BEGIN');
    try {
      const { rows } = await c.query(
        `SELECT status, total_minor, currency, customer_email FROM orders WHERE tenant_id = 'acme' AND id = $1 FOR UPDATE`,
        [order],
      );
      if (rows[0]?.status === 'awaiting_payment') {
        const {
          total_minor: amountMinor,
          currency,
          customer_email: to,
        } = rows[0] as { total_minor: string; currency: string; customer_email: string };
        await c.query(
          `UPDATE orders SET status = 'paid', provider_payment_id = $2, updated_at = now()
            WHERE tenant_id = 'acme' AND id = $1 AND status = 'awaiting_payment'`,
          [order, `pi_${i}`],
        );
        const erpKey = `erp:order-paid:acme:${order}`;
        await c.query(
          `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload)
           VALUES ($1, 'erp', 'order.paid', 'acme', $2), ($3, 'email', 'email.receipt', 'acme', $4)
           ON CONFLICT (operation_key) DO NOTHING`,
          [
            erpKey,
            JSON.stringify({
              operationKey: erpKey,
              type: 'order.paid',
              tenantId: 'acme',
              orderId: order,
              amountMinor: Number(amountMinor),
              currency,
              paymentId: `pi_${i}`,
            }),
            `email:receipt:acme:${order}`,
            JSON.stringify({ to, template: 'receipt', data: { orderId: order, amountMinor: Number(amountMinor), currency } }),
          ],
        );
      }
      await c.query('COMMIT');
    } catch (error) {
      await c.query('ROLLBACK');
      throw error;
    }
  });
}

async function graphile(server: BenchServer, mode: GraphileMode, base: number): Promise<number> {
  const { run, makeWorkerUtils, Logger } = await import('graphile-worker');
  const business = mode === 'business';
  const jobs = business ? SIZES.drain : SIZES.graphile;
  // The business jobs write to the product's orders and outbox tables.
  const db = await freshDatabase(server, business);
  try {
    const utils = await makeWorkerUtils({ connectionString: db.url });
    await utils.migrate();
    await utils.release();
    if (business) await seedOrders(db.url, 1, jobs);
    await withClient(db.url, (c) =>
      // add_jobs in one call: add_job once per row took minutes for 50,000 jobs (setup only, never timed).
      c.query(
        `SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
           SELECT ROW($2::text, json_build_object('i', g), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
             FROM generate_series(1, $1) g))`,
        [jobs, business ? 'apply_payment' : 'noop'],
      ),
    );
    let done = 0;
    let resolveDone!: () => void;
    const finished = new Promise<void>((r) => (resolveDone = r));
    const counted = (task: (payload: unknown, helpers: JobHelpers) => Promise<void>) => async (payload: unknown, helpers: JobHelpers) => {
      await task(payload, helpers);
      if (++done === jobs) resolveDone();
    };
    const started = performance.now();
    // Our own pool, ended after the runner: a connection killed by the database drop must not crash the bench.
    const pgPool = new PgPool({ connectionString: db.url, max: 12 });
    pgPool.on('error', () => undefined);
    pgPool.on('connect', (client) => client.on('error', () => undefined));
    const runner = await run({
      pgPool,
      concurrency: 10,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: new Logger(() => () => undefined),
      taskList: { noop: counted(async () => undefined), apply_payment: counted(applyPaymentJob) },
      ...(mode === 'defaults' ? {} : { preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } }),
    });
    await finished;
    // Batched completions land after the last task returns: wait until the table is empty.
    await waitForCount(db.url, `SELECT (count(*) = 0)::int AS n FROM graphile_worker.jobs`, 1);
    const seconds = (performance.now() - started) / 1000;
    await runner.stop();
    await pgPool.end();
    const rate = jobs / seconds;
    let notes: string | undefined;
    if (business) {
      const effects = await withClient(db.url, async (c) => (await c.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n as number);
      notes = `${jobs} jobs -> ${effects} outbox rows (expected ${jobs * 2}); one transaction per job, completion apart from it (at least once)`;
    }
    rows.push({
      stage: `graphile-worker 0.18: ${GRAPHILE_STAGES[mode]}`,
      value: round(rate, 0),
      unit: 'jobs/s',
      ratio: round(rate / base, 2),
      notes,
    });
    return rate;
  } finally {
    await db.drop();
  }
}

type RelayMode = 'unordered' | 'ordered' | 'contended';

const RELAY_STAGES: Record<RelayMode, string> = {
  unordered: 'relay: refunds delivered to a local sink, no aggregate (as before ordering)',
  ordered: 'relay: the same refunds ordered per order (each paid already delivered)',
  contended: 'relay: paid and refund due together (every refund held once, then released)',
};

/**
 * The relay's throughput, and what ordering per aggregate costs it, A/B in one round.
 * unordered and ordered: the same table (per order a delivered paid and a pending
 * refund), without and with aggregates, so the difference is the claim's hold probe
 * and the release CTE. contended: each order's paid and refund due at once, the worst
 * case (every refund is held once, then released by its paid's delivery).
 */
async function relay(server: BenchServer, base: number, variant: Variant = OFF): Promise<number> {
  const rates = {} as Record<RelayMode, number>;
  for (const mode of ['unordered', 'ordered', 'contended'] as const) {
    const run = await relayRun(server, mode, variant);
    rates[mode] = run.rate;
    rows.push({
      stage: labelled(RELAY_STAGES[mode], variant),
      value: round(run.rate, 0),
      unit: 'deliveries/s',
      ratio: round(run.rate / base, 2),
      statements: run.statements,
      notes: (mode === 'unordered' ? '' : `${round(run.rate / rates.unordered, 2)} x unordered in this round; `) + run.notes,
    });
  }
  return rates.unordered;
}

async function relayRun(
  server: BenchServer,
  mode: RelayMode,
  variant: Variant,
): Promise<{ rate: number; notes: string; statements?: StatementShare[] }> {
  const db = await stageDatabase(server);
  const sink = new Sink();
  await sink.start();
  const service = await startService(
    db.url,
    { ROLES: 'relay', ERP_URL: sink.url, EMAIL_URL: sink.url, RELAY_POLL_MS: '50', ...variant.env },
    variant.mainJs,
  );
  const deliveries = mode === 'contended' ? SIZES.relay : SIZES.relay / 2;
  try {
    await withClient(db.url, async (c) => {
      // Per order: paid (sequence 1), then refunded (sequence 2).
      await c.query(
        `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, aggregate, aggregate_seq, status, delivered_at)
         SELECT 'erp:order-' || k.kind || ':acme:o' || g, 'erp', 'order.' || k.kind, 'acme',
                jsonb_build_object('operationKey', 'erp:order-' || k.kind || ':acme:o' || g, 'type', 'order.' || k.kind,
                  'tenantId', 'acme', 'orderId', 'o' || g, 'amountMinor', 1000, 'currency', 'eur', 'paymentId', 'pi_' || g,
                  'occurredAt', '2026-11-30T10:00:00Z'),
                CASE WHEN $2 <> 'unordered' THEN 'order:o' || g END, CASE WHEN $2 <> 'unordered' THEN k.seq END,
                CASE WHEN $2 <> 'contended' AND k.kind = 'paid' THEN 'delivered' ELSE 'pending' END,
                CASE WHEN $2 <> 'contended' AND k.kind = 'paid' THEN now() END
           FROM generate_series(1, $1 / 2) g, (VALUES ('paid', 1), ('refunded', 2)) AS k(kind, seq)
          ORDER BY g, k.seq`,
        [SIZES.relay, mode],
      );
      await c.query('ANALYZE outbox');
      await statements.reset();
    });
    const probe = await startProbe(server, db.url);
    const cpuBefore = { service: service.cpuMs(), postgres: postgresCpuMs() };
    await withClient(db.url, (c) => c.query(`SELECT pg_notify('outbox', NULL)`));
    const seconds = await waitUntilNone(db.url, 'outbox', ['pending', 'delivering']);
    const cost = await probe?.finish(deliveries);
    const cpuUs = ((service.cpuMs() - cpuBefore.service + postgresCpuMs() - cpuBefore.postgres) * 1000) / deliveries;
    lastMeasure = { value: deliveries / seconds, cpuUs, cost };
    const delivered = await withClient(
      db.url,
      async (c) =>
        (await c.query(`SELECT count(*)::int AS n FROM outbox WHERE status = 'delivered' AND id > $1`, [db.since.outbox])).rows[0].n,
    );
    const outOfOrder = mode === 'contended' ? `; refunded before its paid: ${sink.refundsBeforePaid()}` : '';
    return {
      rate: deliveries / seconds,
      statements: await statements.top(db.url, deliveries),
      notes: `${delivered}/${SIZES.relay} delivered; ${sink.requests} requests for ${sink.firstSeen.size} keys${outOfOrder}; CPU per delivery: service and PostgreSQL ${round(cpuUs, 0)} us${cost ? `; ${describeCost(cost, 'delivery')}` : ''}`,
    };
  } finally {
    await service.stop();
    await sink.stop();
    await db.drop();
  }
}

/**
 * Open loop at a fixed rate, every role in one instance: time from sending the
 * webhook to the ERP receiving the operation. A warm-up at the same rate comes
 * first and is reported apart: a freshly started service opens its pool and
 * compiles its hot paths during its first seconds.
 */
async function endToEnd(server: BenchServer, variant: Variant = OFF): Promise<{ p50: number; serviceUs: number; totalUs: number }> {
  const rate = Number(process.argv.find((a) => a.startsWith('--e2e-rate='))?.slice('--e2e-rate='.length) ?? 300);
  const warmup = rate * E2E_WARMUP_SECONDS;
  // Longer runs (--e2e-seconds=60) narrow the spread of the CPU per event when comparing close builds.
  const seconds = Number(process.argv.find((a) => a.startsWith('--e2e-seconds='))?.slice('--e2e-seconds='.length) ?? SIZES.e2eSeconds);
  const count = rate * seconds;
  const db = await stageDatabase(server);
  const sink = new Sink();
  await sink.start();
  await withClient(db.url, (c) =>
    c.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email)
       SELECT 'acme', 'o' || g, 'awaiting_payment', 1000, 'eur', 'c@example.com' FROM generate_series(0, $1) g`,
      [warmup + count],
    ),
  );
  // Latency on a quiet database: the earlier stages' dirty pages are written out first, not during the run.
  await withClient(server.url, (c) => c.query('CHECKPOINT')).catch(() => log('CHECKPOINT refused; measuring anyway'));
  const service = await startService(db.url, { ERP_URL: sink.url, EMAIL_URL: sink.url, ...variant.env }, variant.mainJs);
  try {
    const pool = new Pool(service.url, { connections: 32 });
    const cold = await sendAtRate(pool, sink, rate, 0, warmup);
    // As autovacuum has done on a running deployment by then (its first look at a new database can take a
    // minute): statistics of the tables as the warm-up filled them, so the statements are planned for their
    // size, not for the empty tables of a fresh database (sequential scans, cached for the whole run).
    await withClient(db.url, (c) => c.query('ANALYZE'));
    await statements.reset();
    const probe = await startProbe(server, db.url);
    const cpuBefore = {
      service: service.cpuMs(),
      postgres: postgresCpuMs(),
      bench: process.cpuUsage(),
      machine: machineBusyMs(),
      roles: postgresCpuByRole(),
    };
    const writesBefore = { service: service.writes(), postgres: postgresWrites() };
    const measured = await sendAtRate(pool, sink, rate, warmup, count);
    const cost = await probe?.finish(count);
    const perEventUs = (ms: number) => round((ms * 1000) / count, 0);
    const machine = perEventUs(machineBusyMs() - cpuBefore.machine);
    const roles = [...postgresCpuByRole()]
      .map(([role, ms]): [string, number] => [role, perEventUs(ms - (cpuBefore.roles.get(role) ?? 0))])
      .filter(([, us]) => us >= 5)
      .sort((a, b) => b[1] - a[1]);
    log(`PostgreSQL CPU per event by process: ${roles.map(([role, us]) => `${role} ${us} us`).join(', ')}`);
    const writes = `the whole machine busy ${machine} us per event (/proc/stat); writes per event: service ${round((service.writes() - writesBefore.service) / count, 1)}, PostgreSQL ${round((postgresWrites() - writesBefore.postgres) / count, 1)}`;
    const bench = process.cpuUsage(cpuBefore.bench);
    const serviceUs = perEventUs(service.cpuMs() - cpuBefore.service);
    const postgresUs = perEventUs(postgresCpuMs() - cpuBefore.postgres);
    const benchUs = round((bench.user + bench.system) / count, 0);
    const totalUs = serviceUs + postgresUs + benchUs;
    const cpu = `CPU per event: service ${serviceUs} us, PostgreSQL ${postgresUs} us, load generator and sink ${benchUs} us; ${writes}`;
    await pool.close();
    const { p50, p99 } = summarize(measured.latencies);
    lastMeasure = { value: p50, p50, p99, cpuUs: totalUs, cost };
    const ack = summarize(measured.ackLatencies);
    const hops = await hopLatencies(db.url, warmup, db.since);
    // What the database says was done, beside what the sink saw (the floor runs the same statements).
    const settled = await withClient(db.url, async (c) => {
      const {
        rows: [r],
      } = await c.query(
        `SELECT (SELECT count(*) FROM webhook_inbox WHERE status = 'done' AND id > $1) AS done,
                (SELECT count(*) FROM outbox WHERE status = 'delivered' AND id > $2) AS delivered, (SELECT count(*) FROM outbox WHERE id > $2) AS entries,
                (SELECT count(*) FROM orders WHERE status = 'paid' AND created_at >= $3) AS paid`,
        [db.since.inbox, db.since.outbox, db.since.at],
      );
      return `in the database: ${r.done} events done, ${r.paid} orders paid, ${r.delivered}/${r.entries} outbox entries delivered`;
    });
    const refused = [...cold.refused, ...measured.refused];
    rows.push({
      stage: labelled(`end to end: accept -> ERP at ${rate} events/s (all roles, one instance)`, variant),
      value: p50,
      unit: 'ms p50',
      statements: await statements.top(db.url, count, 12),
      notes:
        `p99 ${p99} ms; ${measured.latencies.length}/${count} reached the ERP within 60 s${refused.length ? `; not accepted: ${refused.join(', ')}` : ''}; ` +
        `p50/p99 of the hops: 200 received ${ack.p50}/${ack.p99} ms, inbox received -> done ${hops.worker}, outbox created -> delivered ${hops.relay}; ${settled}; ` +
        `${cpu}${cost ? `; ${describeCost(cost, 'event')}` : ''}; after a ${E2E_WARMUP_SECONDS} s warm-up of a fresh service, whose own p50/p99 were ${summarize(cold.latencies).p50}/${summarize(cold.latencies).p99} ms`,
    });
    const rss = service.peakRssMiB();
    rows.push({ stage: labelled('peak RSS of the service (end-to-end run)', variant), value: round(rss, 0), unit: 'MiB' });
    return { p50, serviceUs, totalUs };
  } finally {
    await service.stop();
    await sink.stop();
    await db.drop();
  }
}

const E2E_WARMUP_SECONDS = 5;

/** Sends events first..first+count-1 at `rate`, then waits (60 s at most) until the ERP has each one. */
async function sendAtRate(pool: Pool, sink: Sink, rate: number, first: number, count: number) {
  const sentAt = new Map<string, number>();
  const refused: string[] = [];
  const ackLatencies: number[] = [];
  const inflight: Promise<unknown>[] = [];
  const started = performance.now();
  for (let n = 0; n < count; n++) {
    const due = started + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const i = first + n;
    // A random prefix (a provider's ids are random), the sequence number last for the hops' warm-up filter.
    const signed = signRequest('stripe', BENCH_STRIPE_SECRET, payload(`evt_${randomBytes(8).toString('hex')}_e2e_${i}`, `o${i}`));
    const sent = performance.now();
    sentAt.set(`erp:order-paid:acme:o${i}`, sent);
    inflight.push(
      pool.request({ method: 'POST', path: '/webhooks/stripe-acme', headers: signed.headers, body: signed.body }).then(async (r) => {
        await r.body.text();
        ackLatencies.push(performance.now() - sent);
        if (r.statusCode !== 200) refused.push(`${r.statusCode}`);
      }),
    );
  }
  await Promise.all(inflight);
  const deadline = performance.now() + 60_000;
  const arrived = () => [...sentAt.keys()].filter((key) => sink.firstSeen.has(key)).length;
  while (arrived() < count && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const latencies = [...sentAt].filter(([key]) => sink.firstSeen.has(key)).map(([key, t]) => sink.firstSeen.get(key)! - t);
  return { latencies, ackLatencies, refused };
}

/** p50/p99 in ms of the worker hop (inbox received -> done) and the relay hop (ERP row created -> delivered), past the warm-up. */
async function hopLatencies(url: string, warmup: number, since: StageDatabase['since']): Promise<{ worker: string; relay: string }> {
  return withClient(url, async (c) => {
    const quantiles = async (sql: string) => {
      const {
        rows: [r],
      } = await c.query(
        `SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS p50,
                round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS p99 FROM (${sql}) t`,
      );
      return `${r.p50}/${r.p99} ms`;
    };
    return {
      worker: await quantiles(`SELECT extract(epoch FROM completed_at - received_at) * 1000 AS ms FROM webhook_inbox
                               WHERE status = 'done' AND id > ${since.inbox} AND substring(event_id FROM '\\d+$')::int >= ${warmup}`),
      relay: await quantiles(`SELECT extract(epoch FROM delivered_at - created_at) * 1000 AS ms FROM outbox
                              WHERE destination = 'erp' AND id > ${since.outbox} AND delivered_at IS NOT NULL AND substring(operation_key FROM '\\d+$')::int >= ${warmup}`),
    };
  });
}

/**
 * --only=fairness (issue 34): tenant acme's burst of FAIRNESS_BURST due events beside tenant bravo
 * sending FAIRNESS_RATE payments a second. Bravo's accept -> ERP latency with acme idle, then while
 * acme's burst drains (through the worker and the relay), with the burst inserted at once, or
 * brought back by an operator's bulk replay of quarantined events (POST /admin/inbox/replay), or
 * found missing by a reconciliation run an operator requests (POST /admin/reconciliation/run; acme's
 * endpoint lists its events from a local fake of Stripe's events API, at the default
 * PROVIDER_API_READS_PER_SECOND; the run starts at the maintenance role's next tick, up to 5 s).
 * Acme's drain rate: its events over the seconds until none is pending or processing. One
 * instance, all roles; each variant (BENCH_BEFORE_MAIN: the build before) in turn, alternated.
 * --fairness=burst,reconciliation: only those scenarios (and idle). --fairness-relay-apart: the relay on an instance of its own.
 */
type FairnessScenario = 'idle' | 'burst' | 'bulk replay' | 'reconciliation';
const FAIRNESS_SCENARIOS: FairnessScenario[] = ['idle', 'burst', 'bulk replay', 'reconciliation'];
/** --fairness-events=N: another size of acme's burst (a try of the stage itself). */
const FAIRNESS_BURST = Number(process.argv.find((a) => a.startsWith('--fairness-events='))?.split('=')[1] ?? (quick ? 10_000 : 50_000));
const FAIRNESS_RATE = 10;
/**
 * --fairness-history=N (default 20,000): settled events of a third tenant, with their delivered
 * operations, in the tables before the service starts, as a deployment's steady state has. On
 * empty tables PostgreSQL gives the service's prepared statements generic plans of sequential
 * scans and keeps them until autovacuum's next ANALYZE, which a burst of seconds does not wait
 * for: the outbox insert then read the whole outbox twice per entry (1.7 s for 128 entries into
 * 40,000). 0: the empty tables, as this stage ran before.
 */
const FAIRNESS_HISTORY = Number(process.argv.find((a) => a.startsWith('--fairness-history='))?.split('=')[1] ?? 20_000);
/** --fairness-relay-apart: the relay in a second instance (ROLES=relay), the first without it. */
const relayApart = process.argv.includes('--fairness-relay-apart');
/**
 * --fairness-acme-per-second=N: acme under a worker limit of N events/s (burst N) in the endpoints
 * file, as an operator caps a bulk tenant (docs/operations.md, Worker limits): what bravo's tail
 * is when acme's drain leaves the machine room.
 */
const FAIRNESS_ACME_PER_SECOND = process.argv.find((a) => a.startsWith('--fairness-acme-per-second='))?.split('=')[1];
const FAIRNESS_IDLE_SECONDS = quick ? 10 : 20;
/**
 * --fairness-slowest: a table of bravo's 12 slowest payments of each scenario, each step in ms after
 * its request was sent (accepted, done by the worker, its ERP entry created, first seen by the sink,
 * recorded delivered), with the relay lease that sent it: where the tail waits. With --statements
 * too, the scenario's statements by total time, with their mean and longest call.
 */
const fairnessSlowest = process.argv.includes('--fairness-slowest');

async function fairness(server: BenchServer, variant: Variant, scenario: FairnessScenario): Promise<void> {
  const db = await freshDatabase(server);
  const sink = new Sink();
  await sink.start();
  const stripe = scenario === 'reconciliation' ? await new StripeEventsApi(1, FAIRNESS_BURST).start() : undefined;
  await seedOrders(db.url, 1, FAIRNESS_BURST);
  if (scenario === 'bulk replay') await seedPaymentBacklog(db.url, 1, FAIRNESS_BURST, 'quarantined', false);
  await withClient(db.url, (c) =>
    c.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email)
       SELECT 'bravo', 'b' || g, 'awaiting_payment', 1000, 'eur', 'b' || g || '@example.com' FROM generate_series(0, 5000) g`,
    ),
  );
  if (FAIRNESS_HISTORY > 0) await seedSettledHistory(db.url, FAIRNESS_HISTORY);
  await withClient(db.url, (c) => c.query('ANALYZE'));
  await withClient(server.url, (c) => c.query('CHECKPOINT')).catch(() => log('CHECKPOINT refused; measuring anyway'));
  const env = {
    ERP_URL: sink.url,
    EMAIL_URL: sink.url,
    ...(stripe && { BENCH_ACME_API_URL: stripe.url }),
    ...(FAIRNESS_ACME_PER_SECOND && { BENCH_ACME_PER_SECOND: FAIRNESS_ACME_PER_SECOND }),
    ...variant.env,
  };
  const service = await startService(db.url, relayApart ? { ...env, ROLES: 'api,worker,maintenance' } : env, variant.mainJs);
  const relay = relayApart ? await startService(db.url, { ...env, ROLES: 'relay' }, variant.mainJs) : undefined;
  const pool = new Pool(service.url, { connections: 8 });
  try {
    let next = 0;
    // Warm-up, not counted: a fresh service opens its pool and compiles its hot paths.
    await sendBravo(pool, sink, next, FAIRNESS_RATE * 3, () => false);
    next += FAIRNESS_RATE * 3;
    // With --statements, the statements of the scenario itself (the warm-up's left out).
    await statements.reset();
    const started = performance.now();
    let drainedAt: number | undefined;
    let relayedAt: number | undefined;
    let replayMs: number | undefined;
    if (scenario === 'burst') {
      await seedPaymentBacklog(db.url, 1, FAIRNESS_BURST, 'pending', false);
    } else if (scenario === 'reconciliation') {
      const r = await fetch(`${service.url}/admin/reconciliation/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint: 'stripe-acme', reason: 'bench: reconciliation beside live traffic' }),
      });
      const answer = await r.text();
      if (r.status !== 202) throw new Error(`reconciliation run answered ${r.status}: ${answer}`);
    } else if (scenario === 'bulk replay') {
      void fetch(`${service.url}/admin/inbox/replay`, {
        method: 'POST',
        headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          filter: { tenant: 'acme', status: 'quarantined' },
          dryRun: false,
          reason: 'bench: bulk replay beside live traffic',
        }),
      }).then(async (r) => {
        await r.text();
        if (r.status !== 200) throw new Error(`bulk replay answered ${r.status}`);
        replayMs = performance.now() - started;
      });
    }
    const watch =
      scenario === 'idle'
        ? Promise.resolve()
        : withClient(db.url, async (c) => {
            // Open acme work in each queue, through the partial indexes of the open statuses.
            const open = (table: string, statuses: string) =>
              `EXISTS (SELECT 1 FROM ${table} WHERE status IN (${statuses}) AND tenant_id = 'acme')`;
            for (;;) {
              await new Promise((r) => setTimeout(r, 100));
              const {
                rows: [r],
              } = await c.query(
                `SELECT ${open('webhook_inbox', `'pending', 'processing', 'quarantined'`)} AS inbox, ${open('outbox', `'pending', 'delivering'`)} AS outbox` +
                  // A reconciliation brings acme's events page by page: not drained before its run has ended.
                  (scenario === 'reconciliation'
                    ? `, NOT EXISTS (SELECT 1 FROM reconciliation_runs WHERE status <> 'running' AND status <> 'requested') AS arriving`
                    : ', false AS arriving'),
              );
              if (r.arriving) continue;
              const now = performance.now();
              if (!r.inbox && drainedAt === undefined) drainedAt = now;
              if (!r.inbox && !r.outbox) {
                relayedAt = now;
                return;
              }
              if (now - started > 600_000) throw new Error('acme did not drain within 10 minutes');
            }
          });
    let idleDone = false;
    const measured = sendBravo(pool, sink, next, Number.MAX_SAFE_INTEGER, () =>
      scenario === 'idle' ? (idleDone ||= performance.now() - started > FAIRNESS_IDLE_SECONDS * 1000) : relayedAt !== undefined,
    );
    await watch;
    const { latencies, sent, sentAt } = await measured;
    const { p50, p99 } = summarize(latencies);
    const hops = await withClient(db.url, async (c) => {
      const quantiles = async (sql: string) => {
        const {
          rows: [r],
        } = await c.query(
          `SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS p50,
                  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS p99 FROM (${sql}) t`,
        );
        return `${r.p50}/${r.p99} ms`;
      };
      const worker = await quantiles(`SELECT extract(epoch FROM completed_at - received_at) * 1000 AS ms FROM webhook_inbox
                                       WHERE tenant_id = 'bravo' AND substring(event_id FROM '\\d+$')::int >= ${next}`);
      const relay = await quantiles(`SELECT extract(epoch FROM delivered_at - created_at) * 1000 AS ms FROM outbox
                                      WHERE tenant_id = 'bravo' AND destination = 'erp' AND substring(operation_key FROM '\\d+$')::int >= ${next}`);
      if (fairnessSlowest) await logSlowestBravo(c, sentAt, sink);
      if (fairnessSlowest && withStatements) console.table(await statements.slowest(db.url));
      return `bravo's hops p50/p99: inbox received -> done ${worker}, ERP entry created -> delivered ${relay}`;
    });
    const label = scenario === 'idle' ? 'acme idle' : `during acme's ${FAIRNESS_BURST.toLocaleString('en')}-event ${scenario}`;
    const drain =
      drainedAt === undefined
        ? ''
        : `; acme drained ${round(FAIRNESS_BURST / ((drainedAt - started) / 1000), 0)} events/s through the worker, its ERP and e-mail operations delivered after ${round((relayedAt! - started) / 1000, 1)} s` +
          (replayMs === undefined ? '' : ` (the replay call itself took ${round(replayMs / 1000, 1)} s)`) +
          (stripe ? `; ${stripe.calls} calls to the events API` : '');
    log(`  bravo p50 ${p50} ms, p99 ${p99} ms; ${hops}${drain}`);
    rows.push({
      stage: labelled(`fairness: tenant bravo at ${FAIRNESS_RATE}/s, accept -> ERP, ${label}`, variant),
      value: p50,
      unit: 'ms p50',
      notes: `p99 ${p99} ms; ${latencies.length}/${sent} reached the ERP; ${hops}${drain}`,
    });
    if (drainedAt !== undefined) {
      rows.push({
        stage: labelled(`fairness: acme's ${scenario} drain rate (worker)`, variant),
        value: round(FAIRNESS_BURST / ((drainedAt - started) / 1000), 0),
        unit: 'events/s',
      });
    }
  } finally {
    await pool.close();
    await service.stop();
    await relay?.stop();
    await sink.stop();
    await stripe?.stop();
    await db.drop();
  }
}

/** Bravo's slowest payments (accept -> the sink's first receipt), step by step: --fairness-slowest. */
async function logSlowestBravo(c: Client, sentAt: Map<string, number>, sink: Sink): Promise<void> {
  const { rows } = await c.query(
    `SELECT o.operation_key AS key, extract(epoch FROM i.received_at) * 1000 AS received, extract(epoch FROM i.completed_at) * 1000 AS done,
            extract(epoch FROM o.created_at) * 1000 AS created, extract(epoch FROM o.delivered_at) * 1000 AS delivered, a.duration_ms, a.lease
       FROM outbox o JOIN outbox_attempts a ON a.outbox_id = o.id
       JOIN webhook_inbox i ON i.tenant_id = 'bravo' AND i.event_id = 'evt_bravo_' || substring(o.operation_key FROM '\\d+$')
      WHERE o.tenant_id = 'bravo' AND o.destination = 'erp'`,
  );
  const byKey = new Map<string, Record<string, number | string>>(rows.map((r) => [r.key, r]));
  // The database's clock and this process's are the same machine's.
  const epochOf = Date.now() - performance.now();
  const first = Math.min(...sentAt.values());
  const slowest = [...sentAt]
    .filter(([key]) => sink.firstSeen.has(key) && byKey.has(key))
    .map(([key, sent]) => ({ key, sent, seen: sink.firstSeen.get(key)! }))
    .sort((a, b) => b.seen - b.sent - (a.seen - a.sent))
    .slice(0, 12);
  console.table(
    slowest.map(({ key, sent, seen }) => {
      const r = byKey.get(key)!;
      const after = (epochMs: number | string) => Math.round(Number(epochMs) - epochOf - sent);
      return {
        key,
        'sent at': Math.round(sent - first),
        accepted: after(r.received),
        done: after(r.done),
        'ERP entry': after(r.created),
        'sink saw it': Math.round(seen - sent),
        recorded: after(r.delivered),
        'send ms': r.duration_ms,
        lease: r.lease,
      };
    }),
  );
}

/** Bravo's payments at FAIRNESS_RATE until `stop()`, then (60 s at most) until the ERP has each one. */
async function sendBravo(
  pool: Pool,
  sink: Sink,
  first: number,
  most: number,
  stop: () => boolean,
): Promise<{ latencies: number[]; sent: number; sentAt: Map<string, number> }> {
  const sentAt = new Map<string, number>();
  const inflight: Promise<unknown>[] = [];
  const started = performance.now();
  for (let n = 0; n < most && !stop(); n++) {
    const wait = started + (n * 1000) / FAIRNESS_RATE - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const i = first + n;
    const signed = signRequest('stripe', BENCH_STRIPE_SECRET, payload(`evt_bravo_${i}`, `b${i}`));
    sentAt.set(`erp:order-paid:bravo:b${i}`, performance.now());
    inflight.push(
      pool.request({ method: 'POST', path: '/webhooks/stripe-bravo', headers: signed.headers, body: signed.body }).then(async (r) => {
        await r.body.text();
        if (r.statusCode !== 200) log(`bravo event ${i} answered ${r.statusCode}`);
      }),
    );
  }
  await Promise.all(inflight);
  const deadline = performance.now() + 60_000;
  while ([...sentAt.keys()].some((key) => !sink.firstSeen.has(key)) && performance.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  const latencies = [...sentAt].filter(([key]) => sink.firstSeen.has(key)).map(([key, t]) => sink.firstSeen.get(key)! - t);
  return { latencies, sent: sentAt.size, sentAt };
}

/**
 * Claim latency with no settled rows and with a million: the partial "due"
 * index holds only pending rows, so the claim should not notice the history.
 */
async function claimHygiene(server: BenchServer): Promise<void> {
  const db = await freshDatabase(server);
  try {
    const timeClaims = () =>
      withClient(db.url, async (c) => {
        await seedPending(c, 2_000);
        const times: number[] = [];
        for (let i = 0; i < 200; i++) {
          const t0 = performance.now();
          await c.query('BEGIN');
          await c.query(CLAIM, [new Date(), 'bench', 64, 30_000]);
          await c.query('ROLLBACK'); // the same rows stay due: every sample claims the same way
          times.push(performance.now() - t0);
        }
        await c.query(`DELETE FROM webhook_inbox WHERE status = 'pending'`);
        return median(times);
      });
    const empty = await timeClaims();
    const settled = SIZES.settledRows;
    await withClient(db.url, async (c) => {
      await insertInboxRows(c, 'acme', 'evt_done_', settled, 'done');
      await c.query('VACUUM ANALYZE webhook_inbox');
      await c.query('CHECKPOINT'); // the million rows' writes must not land in the timed claims
    });
    const full = await timeClaims();
    rows.push({
      stage: `claim of 64 due events: 0 vs ${settled.toLocaleString('en')} settled rows`,
      value: round(full, 2),
      unit: 'ms median',
      notes: `${round(empty, 2)} ms with an empty history (partial index on due rows)`,
    });
  } finally {
    await db.drop();
  }
}

/**
 * The worker's claim with limits (issue 34) against the plain claim, on the same rows: 50,000
 * due events of acme and 10 of bravo, a claim of 512, each in a transaction rolled back (the
 * same rows stay due). The plain one is what a worker without limits runs (CLAIM). The limited
 * one is the whole transaction of WorkerLimits.claim: its lock timeout set, the keys' bucket rows locked, LIMITED_CLAIM
 * with a tenant limit that does not bind (acme at 1,000 at once) and an endpoint rate (bravo at
 * 100/s), the tokens spent. Both claim 512 rows: the difference is what the limits cost. Each
 * statement is prepared, as the service's are; the two alternate in blocks of 25.
 */
async function limitedClaimCost(server: BenchServer): Promise<void> {
  const db = await freshDatabase(server);
  try {
    await withClient(db.url, async (c) => {
      await seedPending(c, 50_000);
      await insertInboxRows(c, 'bravo', 'evt_bravo_', 10, 'pending');
      const keys = ['endpoint:stripe-bravo', 'tenant:acme'];
      await c.query(`INSERT INTO worker_limit_buckets (key, tokens) VALUES ('endpoint:stripe-bravo', 100), ('tenant:acme', 0)`);
      await c.query('VACUUM ANALYZE');
      const limits = [
        ['endpoint', 'tenant'],
        ['stripe-bravo', 'acme'],
        [null, 1000],
        [100, null],
      ];
      const plain = async () => {
        await c.query('BEGIN');
        const claimed = await c.query({ name: 'claim', text: CLAIM, values: [new Date(), 'bench', 512, 30_000] });
        await c.query('ROLLBACK');
        return claimed.rowCount;
      };
      const limited = async () => {
        await c.query('BEGIN');
        await c.query('SET LOCAL lock_timeout = 2000');
        await c.query({
          name: 'buckets',
          text: 'SELECT key, tokens, refilled_at, now() AS now FROM worker_limit_buckets WHERE key = ANY($1) ORDER BY key FOR UPDATE',
          values: [keys],
        });
        const claimed = await c.query({ name: 'limited', text: LIMITED_CLAIM, values: [new Date(), 'bench', 512, 30_000, ...limits] });
        await c.query({
          name: 'spend',
          text: `UPDATE worker_limit_buckets b SET tokens = v.tokens, refilled_at = now()
                   FROM unnest($1::text[], $2::float8[]) AS v(key, tokens) WHERE b.key = v.key`,
          values: [['endpoint:stripe-bravo'], [90]],
        });
        await c.query('ROLLBACK');
        return claimed.rowCount;
      };
      const time = async (claim: () => Promise<number | null>, into: number[]) => {
        for (let i = 0; i < 25; i++) {
          const t0 = performance.now();
          const n = await claim();
          into.push(performance.now() - t0);
          if (n !== 512) throw new Error(`a bench claim took ${n} rows, not 512`);
        }
      };
      const warm: number[] = [];
      await time(plain, warm);
      await time(limited, warm);
      const times = { plain: [] as number[], limited: [] as number[] };
      for (let block = 0; block < 8; block++) {
        await time(plain, times.plain);
        await time(limited, times.limited);
      }
      const [p, l] = [median(times.plain), median(times.limited)];
      rows.push({
        stage: 'claim of 512 (50,000 due of one tenant, 10 of another): without limits',
        value: round(p, 2),
        unit: 'ms median',
        reference: true,
        notes: 'CLAIM in BEGIN ... ROLLBACK, prepared',
      });
      rows.push({
        stage: 'claim of 512, the same rows: with a tenant and an endpoint limit (the whole limited transaction)',
        value: round(l, 2),
        unit: 'ms median',
        ratio: round(l / p, 2),
        notes: `bucket rows locked, LIMITED_CLAIM, tokens spent; ${round((l - p) / 512, 4)} ms more per claimed event`,
      });
    });
  } finally {
    await db.drop();
  }
}

/** `n` settled events of tenant carol (done, their payments' ERP and e-mail operations delivered): a history beside the stage's own rows. */
async function seedSettledHistory(url: string, n: number): Promise<void> {
  await withClient(url, async (c) => {
    await insertInboxRows(c, 'carol', 'evt_history_', n, 'done');
    await c.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, aggregate, aggregate_seq, status, attempts, delivered_at)
       SELECT d || ':carol:h' || g, d, 'order.paid', 'carol', '{}', 'order:h' || g, s, 'delivered', 1, now()
         FROM generate_series(1, $1::int) g, (VALUES ('erp', 1), ('email', 2)) AS v(d, s)`,
      [n],
    );
  });
}

async function seedPending(c: import('pg').Client, n: number): Promise<void> {
  await insertInboxRows(c, 'acme', 'evt_due_', n, 'pending');
}

/** `n` payment events of `tenant` at its endpoint `stripe-<tenant>`, ids `<prefix><1..n>`: due now, or done now. */
async function insertInboxRows(
  c: import('pg').Client,
  tenant: string,
  prefix: string,
  n: number,
  status: 'pending' | 'done',
): Promise<void> {
  await c.query(
    `INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload,
                                payload_sha256, verified_with, status, completed_at)
     SELECT $2 || ':stripe:platform:test', $3 || g, $2, 'stripe', 'stripe-' || $2, 'payment_intent.succeeded',
            '{"id":"x"}', repeat('0', 64), 'bench', $4::text, CASE WHEN $4::text = 'done' THEN now() END
       FROM generate_series(1, $1::int) g`,
    [n, tenant, prefix, status],
  );
}

/** Per stage: the sample with the median ratio to its own round's baseline (or the median value), and the spread. */
function summary(): (Row & { spread: string })[] {
  return [...samples.values()].map((list) => {
    // A reference by its value, every other stage by its ratio to its own round's reference (which may be exactly 1).
    const key = (r: Row) => (r.reference || r.ratio === undefined ? r.value : r.ratio);
    const sorted = [...list].sort((a, b) => key(a) - key(b));
    const mid = sorted[Math.floor((sorted.length - 1) / 2)];
    const values = list.map((r) => r.value);
    const spread = list.length > 1 ? `${Math.min(...values)}..${Math.max(...values)}` : '';
    return { ...mid, spread };
  });
}

function print(table: (Row & { spread: string })[]): void {
  const header = ['stage', 'result', 'x reference', `range over ${rounds} round(s)`, 'notes'];
  const cells = table.map((r) => [
    r.stage,
    `${r.value} ${r.unit}`,
    r.ratio === undefined ? '' : r.ratio.toFixed(2),
    r.spread,
    r.notes ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((t) => t[i].length)));
  const line = (row: string[]) => `| ${row.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  process.stdout.write(`${line(header)}\n${line(widths.map((w) => '-'.repeat(w)))}\n${cells.map(line).join('\n')}\n`);
  for (const r of table.filter((t) => t.statements?.length)) {
    const unit = { 'events/s': 'event', 'deliveries/s': 'delivery', 'ms p50': 'event' }[r.unit] ?? 'request';
    process.stdout.write(`\nPostgreSQL execution time per ${unit}, ${r.stage} (median round):\n`);
    for (const st of r.statements!)
      process.stdout.write(
        `  ${String(st.usPerUnit).padStart(5)} us (+${st.planUsPerUnit} planning)  ${st.calls} calls, ${st.rows} rows  ${st.query}\n`,
      );
  }
}

/**
 * Valid requests' latency while `SLOW` strangers hold connections open, each
 * trickling one byte of a never-ending request head every second (slowloris),
 * against the same load with no strangers, on one service in the same run; then
 * while one more stranger, from an address of its own, also holds `IDLE_BODIES`
 * bodies of a declared 1 MiB, all but their last byte sent, idle until the body
 * deadline: more than the whole intake buffer (128 MiB), which its per-client
 * share must keep from the valid senders.
 */
async function slowConnections(server: BenchServer): Promise<void> {
  const SLOW = 500;
  const IDLE_BODIES = 134;
  const db = await freshDatabase(server);
  const service = await startService(db.url, { ROLES: 'api' });
  const port = Number(new URL(service.url).port);
  const measure = async (tag: string) => {
    const count = quick ? 2000 : 6000;
    const wire = serialize(
      Array.from({ length: count }, (_, i) => {
        const id = `evt_slow_${tag}_${i}`;
        return { path: '/webhooks/stripe-acme', ...signRequest('stripe', BENCH_STRIPE_SECRET, payload(id, `o${i}`)) };
      }),
    );
    const started = performance.now();
    const load = await runLoad(port, wire, 16);
    const others = [...load.others].map(([status, n]) => `${n} x ${status}`).join(', ') || 'none';
    return {
      rate: load.ok.length / ((performance.now() - started) / 1000),
      ...summarize(load.latencies),
      ok: load.ok.length,
      count,
      others,
    };
  };
  const sockets: import('node:net').Socket[] = [];
  let trickle: NodeJS.Timeout | undefined;
  try {
    await measure('warm');
    const alone = await measure('alone');
    const { connect } = await import('node:net');
    let closedEarly = 0;
    for (let i = 0; i < SLOW; i++) {
      const socket = connect({ port, host: '127.0.0.1' });
      socket.on('error', () => undefined);
      socket.on('close', () => closedEarly++);
      socket.write('POST /webhooks/stripe-acme HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      sockets.push(socket);
    }
    trickle = setInterval(() => {
      for (const socket of sockets) if (socket.writable) socket.write('x');
    }, 1000);
    const slowed = await measure('slowed');
    rows.push({
      stage: `ingestion: valid requests (16 in flight) while ${SLOW} slow connections trickle a byte a second`,
      value: slowed.p99,
      unit: 'ms p99',
      notes:
        `p50 ${slowed.p50} ms, ${round(slowed.rate, 0)} accepted/s (${slowed.ok}/${slowed.count}); ` +
        `alone in the same run: p50 ${alone.p50} ms, p99 ${alone.p99} ms, ${round(alone.rate, 0)} accepted/s; ` +
        `throughput ratio ${round(slowed.rate / alone.rate, 2)}; ${closedEarly} slow connections already closed by the header deadline`,
    });

    const hog = await holdIdleBodies(port, IDLE_BODIES, sockets);
    const hogged = await measure('hogged');
    rows.push({
      stage: `ingestion: valid requests (16 in flight) while one other address also holds ${IDLE_BODIES} idle 1 MiB bodies`,
      value: hogged.p99,
      unit: 'ms p99',
      notes:
        `p50 ${hogged.p50} ms, ${round(hogged.rate, 0)} accepted/s (${hogged.ok}/${hogged.count}), rejected: ${hogged.others}; ` +
        `of its bodies ${hog.held} held (${round(hog.bufferedBytes / 1024 / 1024, 1)} MiB buffered), ${hog.refused} refused; must be p99 < 100 ms, 0 rejected`,
    });
  } finally {
    if (trickle) clearInterval(trickle);
    for (const socket of sockets) socket.destroy();
    await service.stop();
    await db.drop();
  }
}

/**
 * `count` requests from 127.0.0.2 (one client; the valid load comes from 127.0.0.1),
 * each declaring 1 MiB and sending all of it but the last byte, then idle; their sockets join
 * `sockets`. Resolves once the service has taken every byte it will: how many it
 * holds and refused, and the bytes buffered.
 */
async function holdIdleBodies(
  port: number,
  count: number,
  sockets: import('node:net').Socket[],
): Promise<{ held: number; refused: number; bufferedBytes: number }> {
  const { connect } = await import('node:net');
  const declared = 1024 * 1024;
  const head = `POST /webhooks/stripe-acme HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`;
  const body = Buffer.alloc(declared - 1, 'x');
  let refused = 0;
  for (let i = 0; i < count; i++) {
    const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    socket.on('error', () => undefined);
    socket.once('data', () => refused++);
    socket.write(head);
    socket.write(body);
    sockets.push(socket);
  }
  const buffered = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return Number(/^webhook_intake_buffered_bytes (\d+)/m.exec(text)?.[1] ?? 0);
  };
  const deadline = Date.now() + 20_000;
  let bytes = await buffered();
  while (bytes + refused * body.length < count * body.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    bytes = await buffered();
  }
  return { held: Math.round(bytes / body.length), refused, bufferedBytes: bytes };
}

/**
 * --aged: each selected stage (ingestion, drain, relay, end to end) against an empty database and against
 * an aged one (bench/lib/aged.ts), alternating in every round, and per stage the ratio aged / empty of its
 * rate, CPU per event, latency, WAL, full-page images and buffer misses. --squeeze runs the server in a
 * memory cgroup that its hot indexes do not fit, evicting its files before every stage.
 */
const agedBench = process.argv.includes('--aged');
const squeezeBench = agedBench && process.argv.includes('--squeeze');
const BENCH_SCOPE = 'acme:stripe:platform:test';
/** The cgroup's limit in --squeeze: shared_buffers (128 MB) and about as much page cache again. */
const SQUEEZE_BYTES = Number(process.argv.find((a) => a.startsWith('--squeeze-mb='))?.slice('--squeeze-mb='.length) ?? 384) * 1024 ** 2;
/** The kept server's directory under .data/ (--aged-dir= another, e.g. to try the bench while a build runs). */
const AGED_DIR = process.argv.find((a) => a.startsWith('--aged-dir='))?.slice('--aged-dir='.length) ?? 'bench-aged-postgres';
type Target = 'empty' | 'aged';
let target: Target = 'empty';
let agedUrl: string | undefined;
let squeeze: Squeeze | undefined;

/** What the last stage measured, for the aged / empty ratios. */
interface Measure {
  /** The stage's rate (accepted/s, events/s, deliveries/s) or, end to end, its p50. */
  value: number;
  p50?: number;
  p99?: number;
  /** CPU per event of the service and PostgreSQL (end to end: and the load generator and sink). */
  cpuUs: number;
  cost?: StorageCost;
}
let lastMeasure: Measure | undefined;

interface StageDatabase {
  url: string;
  drop(): Promise<void>;
  /** The history before the stage: rows past these ids (orders created since `at`) are the stage's. */
  since: { inbox: number; outbox: number; audit: number; at: Date };
}

/** A fresh database, or with --aged in an aged pass the aged one, whose stage rows are deleted after the stage. */
async function stageDatabase(server: BenchServer): Promise<StageDatabase> {
  if (target === 'empty') return { ...(await freshDatabase(server)), since: { inbox: 0, outbox: 0, audit: 0, at: new Date(0) } };
  const url = agedUrl!;
  const since = await withClient(url, async (c) => {
    const {
      rows: [r],
    } = await c.query(
      `SELECT coalesce((SELECT max(id) FROM webhook_inbox), 0)::int AS inbox, coalesce((SELECT max(id) FROM outbox), 0)::int AS outbox,
              coalesce((SELECT max(id) FROM admin_audit), 0)::int AS audit, now() AS at`,
    );
    return r as StageDatabase['since'];
  });
  return { url, since, drop: () => forgetStage(url, since) };
}

/** Deletes what a stage wrote into the aged database and vacuums it away, so the next stage finds the history as built. */
async function forgetStage(url: string, since: StageDatabase['since']): Promise<void> {
  await withClient(url, async (c) => {
    await c.query('DELETE FROM webhook_inbox_attempts WHERE inbox_id > $1', [since.inbox]);
    await c.query('DELETE FROM order_transitions WHERE inbox_id > $1', [since.inbox]);
    await c.query('DELETE FROM webhook_inbox WHERE id > $1', [since.inbox]);
    // The stage's payloads are in the days since it started (the recent partitions only).
    await c.query(`DELETE FROM webhook_inbox_payloads WHERE day >= ($2::timestamptz AT TIME ZONE 'UTC')::date AND inbox_id > $1`, [
      since.inbox,
      since.at,
    ]);
    await c.query('DELETE FROM outbox_attempts WHERE outbox_id > $1', [since.outbox]);
    await c.query('DELETE FROM outbox WHERE id > $1', [since.outbox]);
    await c.query('DELETE FROM orders WHERE created_at >= $1', [since.at]);
    await c.query('DELETE FROM admin_audit WHERE id > $1', [since.audit]);
    await c.query(
      'VACUUM webhook_inbox, webhook_inbox_payloads, webhook_inbox_attempts, order_transitions, outbox, outbox_attempts, orders',
    );
  });
}

/** With --aged: a checkpoint (every stage starts from one, so full-page images compare), eviction when squeezed, then the probe. */
async function startProbe(server: BenchServer, databaseUrl: string): Promise<StorageProbe | undefined> {
  if (!agedBench) return undefined;
  return StorageProbe.start(server.url, databaseUrl, squeeze ? () => squeeze!.diskReads() : undefined);
}

async function beforeStage(server: BenchServer): Promise<void> {
  if (!agedBench) return;
  await withClient(server.url, (c) => c.query('CHECKPOINT'));
  squeeze?.evict();
}

const AGED_STAGES = ['ingestion', 'drain', 'relay', 'e2e'] as const;
type AgedStage = (typeof AGED_STAGES)[number];

async function runAgedStage(server: BenchServer, stage: AgedStage, base: number, variant: Variant): Promise<Measure> {
  lastMeasure = undefined;
  await beforeStage(server);
  if (stage === 'ingestion') await ingestion(server, labelled('group commit on (defaults)', variant), {}, base);
  if (stage === 'drain') await workerDrain(server, 1, base, variant);
  if (stage === 'relay') {
    const run = await relayRun(server, 'unordered', variant);
    rows.push({
      stage: labelled(RELAY_STAGES.unordered, variant),
      value: round(run.rate, 0),
      unit: 'deliveries/s',
      ratio: round(run.rate / base, 2),
      notes: run.notes,
    });
  }
  if (stage === 'e2e') await endToEnd(server, variant);
  return lastMeasure!;
}

async function agedRun(server: BenchServer): Promise<void> {
  const params = agedParams();
  log(
    `aged history: ${params.days} days at ${round(params.rate, 2)} events/s = ${params.events.toLocaleString('en')} events (database ${params.database})`,
  );
  const aged = await ensureAged(server.url, params, payload('evt_SPLIT', 'ORDER_SPLIT'), migrate, log);
  agedUrl = aged.url;
  await StorageProbe.prepare(server.url);
  const sizes = await keptPerEvent(aged.url, params);
  if (process.argv.includes('--aged-build-only')) return;
  if (squeezeBench) {
    squeeze = Squeeze.enter(join(__dirname, '..', '.data', AGED_DIR), SQUEEZE_BYTES);
    log(`squeezed: the server's processes in a ${SQUEEZE_BYTES / 1024 ** 2} MiB memory cgroup, its files evicted before each stage`);
  }
  const mode = squeezeBench ? `squeezed to ${SQUEEZE_BYTES / 1024 ** 2} MiB` : 'in memory';
  const label = (t: Target): Variant => ({
    label: t === 'aged' ? `aged ${round(params.events / 1e6, 1)}M events, ${mode}` : `empty, ${mode}`,
    env: {},
  });
  const stages = AGED_STAGES.filter((s) => wanted(s));
  let agedIngestWal: number | undefined;
  try {
    for (let pass = 0; pass < rounds; pass++) {
      log(`round ${pass + 1}/${rounds}: baseline (pgbench, the round's noise)...`);
      const base = await baseline(server, 'prepared');
      const results = new Map<string, Partial<Record<Target, Measure>>>();
      for (const t of (pass % 2 ? ['aged', 'empty'] : ['empty', 'aged']) as Target[]) {
        target = t;
        for (const stage of stages) {
          log(`${stage} [${label(t).label}]...`);
          results.set(stage, { ...results.get(stage), [t]: await runAgedStage(server, stage, base, label(t)) });
        }
      }
      target = 'empty';
      for (const [stage, { empty, aged: old }] of results) pushAgedRatios(stage, mode, empty!, old!);
      agedIngestWal = results.get('ingestion')?.aged?.cost?.walBytes ?? agedIngestWal;
    }
    if (process.argv.includes('--aged-retention')) await forgetOneDay(server, aged.url, params, agedIngestWal);
  } finally {
    squeeze?.leave();
  }
  rows.push({ stage: `aged database: ${params.database}`, value: round(aged.bytes / 1024 ** 3, 1), unit: 'GiB', notes: sizes });
}

/** One row per metric and round: the aged pass over the empty one. */
function pushAgedRatios(stage: string, mode: string, empty: Measure, old: Measure): void {
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || b === 0 ? undefined : round(a / b, 2);
  const metrics: [string, number | undefined, number | undefined][] = [
    [stage === 'e2e' ? 'p50' : 'rate', old.value, empty.value],
    ['CPU per event', old.cpuUs, empty.cpuUs],
    ['p99', old.p99, empty.p99],
    ['WAL bytes per event', old.cost?.walBytes, empty.cost?.walBytes],
    ['full-page images per event', old.cost?.fpi, empty.cost?.fpi],
    ['accept INSERT time per row', old.cost?.acceptUsPerRow, empty.cost?.acceptUsPerRow],
  ];
  for (const [what, a, b] of metrics) {
    const r = ratio(a, b);
    if (r !== undefined)
      rows.push({ stage: `aged / empty (${mode}): ${stage}, ${what}`, value: r, unit: 'x', notes: `${round(a!, 3)} / ${round(b!, 3)}` });
  }
  // Misses and disk reads are near zero on an empty database: absolute, both sides.
  for (const [what, key] of [
    ['buffer misses per event', 'blksRead'],
    ['disk reads per event', 'diskReads'],
  ] as const) {
    rows.push({
      stage: `aged (${mode}): ${stage}, ${what}`,
      value: old.cost?.[key] ?? NaN,
      unit: '',
      notes: `empty: ${empty.cost?.[key]}`,
    });
  }
}

/**
 * Bytes per event each table keeps in the aged database (heap and TOAST, each index), and what they
 * come to at 10, 100 and 1,000 events/s with the default retention: tables kept for the identity window
 * scale with the rate, orders, transitions and audit also with RETENTION_ORDER_DAYS / _AUDIT_DAYS (400) over
 * the history's days. "Hot" indexes take inserts at random keys: an insert reads its leaf wherever it is.
 */
async function keptPerEvent(url: string, params: AgedParams): Promise<string> {
  const RANDOM_KEYS = ['outbox_operation_key', 'outbox_aggregate', 'orders_pkey', 'orders_payment', 'order_transitions_order'];
  const LONGER: Record<string, number> = { orders: 400, order_transitions: 400, admin_audit: 400 };
  const { rows: relations } = await withClient(url, (c) =>
    c.query(
      `SELECT t.relname AS tbl, pg_table_size(t.oid)::float8 AS heap, i.relname AS idx, pg_relation_size(i.oid)::float8 AS idx_bytes
         FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
         LEFT JOIN pg_index x ON x.indrelid = t.oid LEFT JOIN pg_class i ON i.oid = x.indexrelid
        WHERE t.relkind = 'r' AND t.relname NOT LIKE 'bench_%'`,
    ),
  );
  const perTable = new Map<string, { heap: number; indexes: Record<string, number> }>();
  // A partition (webhook_inbox_payloads_YYYYMMDD) counts under its table, its indexes under the parent's names.
  const day = /_(\d{8})(_.*)?$/;
  const seen = new Set<string>();
  for (const r of relations as { tbl: string; heap: number; idx: string | null; idx_bytes: number }[]) {
    const tbl = r.tbl.replace(day, '');
    const entry = perTable.get(tbl) ?? { heap: 0, indexes: {} as Record<string, number> };
    if (!seen.has(r.tbl)) entry.heap += r.heap;
    seen.add(r.tbl);
    if (r.idx) {
      const idx = r.tbl === tbl ? r.idx : `${tbl}_${r.idx.replace(`${r.tbl}_`, '')}`;
      entry.indexes[idx] = (entry.indexes[idx] ?? 0) + r.idx_bytes;
    }
    perTable.set(tbl, entry);
  }
  const perEvent = (bytes: number) => round(bytes / params.events, 1);
  const tables = [...perTable].map(([tbl, { heap, indexes }]) => ({
    table: tbl,
    keptDays: LONGER[tbl] ?? params.days,
    heapPerEvent: perEvent(heap),
    indexesPerEvent: Object.fromEntries(Object.entries(indexes).map(([k, v]) => [k, perEvent(v)])),
    totalPerEvent: perEvent(heap + Object.values(indexes).reduce((a, b) => a + b, 0)),
  }));
  const projection = [10, 100, 1000].map((rate) => {
    const scale = (t: (typeof tables)[number]) => rate * 86_400 * t.keptDays;
    const total = tables.reduce((sum, t) => sum + t.totalPerEvent * scale(t), 0);
    const hot = tables.reduce(
      (sum, t) =>
        sum +
        Object.entries(t.indexesPerEvent)
          .filter(([k]) => RANDOM_KEYS.includes(k))
          .reduce((s, [, v]) => s + v * scale(t), 0),
      0,
    );
    const history = tables.filter((t) => t.keptDays === params.days).reduce((sum, t) => sum + t.totalPerEvent * scale(t), 0);
    return { rate, totalGB: round(total / 1e9, 1), historyWindowGB: round(history / 1e9, 1), randomKeyIndexesGB: round(hot / 1e9, 1) };
  });
  const file = join(__dirname, 'results', `aged-sizes-${params.database}.json`);
  writeFileSync(file, JSON.stringify({ params, at: new Date().toISOString(), tables, projection }, null, 2));
  log(`bytes per event by table and projections: ${file}`);
  return `bytes per event ${round(
    tables.reduce((s, t) => s + t.totalPerEvent, 0),
    0,
  )} (${tables
    .filter((t) => t.totalPerEvent >= 1)
    .sort((a, b) => b.totalPerEvent - a.totalPerEvent)
    .map((t) => `${t.table} ${round(t.totalPerEvent, 0)}`)
    .join(
      ', ',
    )}); projected (default retention): ${projection.map((p) => `${p.rate}/s ${p.totalGB} GB, random-key indexes ${p.randomKeyIndexesGB} GB`).join('; ')}`;
}

/**
 * The oldest day of payloads forgotten as the retention job does it (PayloadDays.forgetBefore): its open
 * rows' payloads carried to today, the partition detached CONCURRENTLY and dropped. WAL against that day's
 * ingest WAL (its events x the aged ingestion stage's WAL per accepted event, when that stage ran).
 */
async function forgetOnePayloadDay(server: BenchServer, url: string, eventsPerDay: number, ingestWalPerEvent?: number): Promise<void> {
  const [oldest] = await withClient(
    url,
    async (c) =>
      (
        await c.query(
          `SELECT to_char(min(to_date(substr(c.relname, 24), 'YYYYMMDD')), 'YYYY-MM-DD') AS day,
                (SELECT count(*) FROM webhook_inbox_payloads p WHERE p.day = min(to_date(substr(c.relname, 24), 'YYYYMMDD')))::int AS payloads
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_inbox_payloads'::regclass`,
        )
      ).rows,
  );
  const dataSource = createDataSource(url, 4);
  await dataSource.initialize();
  try {
    const days = new PayloadDays(dataSource);
    const dayIngest = ingestWalPerEvent === undefined ? undefined : ingestWalPerEvent * eventsPerDay;
    const share = (wal: number) =>
      dayIngest
        ? `; ${round((100 * wal) / dayIngest, 4)}% of that day's ingest WAL (${round(eventsPerDay, 0)} events x ${ingestWalPerEvent} B)`
        : '';
    // The two steps apart: carrying the open rows (a row each) and dropping the day (the same whatever it held).
    await withClient(server.url, (c) => c.query('CHECKPOINT'));
    let probe = await StorageProbe.start(server.url, url);
    let started = performance.now();
    const carried = await days.carry(oldest.day);
    const carrySeconds = (performance.now() - started) / 1000;
    const carryCost = await probe.finish(1);
    rows.push({
      stage: `retention, one day of the aged history: payloads of its open events carried to today`,
      value: round(carrySeconds, 2),
      unit: 's',
      notes: `day ${oldest.day}: ${carried} open rows; WAL ${round(carryCost.walBytes / 1e3, 1)} kB (${round(carryCost.walBytes / Math.max(carried, 1), 0)} B per row), ${carryCost.fpi} full-page images${share(carryCost.walBytes)}`,
    });
    await withClient(server.url, (c) => c.query('CHECKPOINT'));
    probe = await StorageProbe.start(server.url, url);
    started = performance.now();
    const next = new Date(`${oldest.day}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    const result = await days.forgetBefore(next.toISOString().slice(0, 10), RETENTION_BATCH_SIZE);
    const seconds = (performance.now() - started) / 1000;
    const cost = await probe.finish(1);
    rows.push({
      stage: `retention, one day of the aged history: payloads forgotten by dropping the day's partition`,
      value: round(seconds, 2),
      unit: 's',
      notes:
        `day ${oldest.day}: ${oldest.payloads} payloads, ${result.carried} more carried, dropped: ${result.dropped.join(', ') || 'none'}` +
        `${result.deferred.length ? `, deferred: ${result.deferred.join(', ')}` : ''}; WAL ${round(cost.walBytes / 1e3, 1)} kB, ${cost.fpi} full-page images` +
        share(cost.walBytes),
    });
  } finally {
    await dataSource.destroy();
  }
}

/**
 * --aged-retention: today's retention statements over the aged history's oldest day of payloads and
 * of identities (and that day's delivered outbox entries), in batches as the job runs them but with no
 * cap between them, then the VACUUM autovacuum would run after them: time, rows/s, WAL, full-page images.
 * It consumes that day of the aged database (recorded in bench_aged.forgotten_days).
 */
async function forgetOneDay(server: BenchServer, url: string, params: AgedParams, ingestWalPerEvent?: number): Promise<void> {
  const { end } = await agedHistory(url);
  const day = 86_400_000;
  const forgotten = await withClient(url, async (c) => {
    await c.query('ALTER TABLE bench_aged ADD COLUMN IF NOT EXISTS forgotten_days int NOT NULL DEFAULT 0');
    return Number((await c.query('SELECT forgotten_days FROM bench_aged')).rows[0].forgotten_days);
  });
  const eventsPerDay = params.rate * 86_400;
  await forgetOnePayloadDay(server, url, eventsPerDay, ingestWalPerEvent);
  const kinds: [string, string, Date][] = [
    [
      'legacy payloads purged row by row (UPDATE ... SET payload = NULL; none in this layout)',
      PURGE_PAYLOADS,
      new Date(end.getTime() - (params.payloadDays - 1 - forgotten) * day),
    ],
    ['identities deleted, with their attempts', DELETE_IDENTITIES, new Date(end.getTime() - (params.days - 1 - forgotten) * day)],
    [
      'delivered outbox entries deleted, with their attempts',
      PRUNE_DELIVERED,
      new Date(end.getTime() - (params.days - 1 - forgotten) * day),
    ],
  ];
  for (const [what, sql, before] of kinds) {
    await withClient(server.url, (c) => c.query('CHECKPOINT'));
    const probe = await StorageProbe.start(server.url, url);
    const started = performance.now();
    let total = 0;
    let batches = 0;
    await withClient(url, async (c) => {
      for (;;) {
        const result = await c.query(sql, [before, RETENTION_BATCH_SIZE]);
        const n = result.rows[0]?.n ?? result.rowCount ?? 0;
        total += Number(n);
        batches++;
        if (Number(n) < RETENTION_BATCH_SIZE) break;
      }
    });
    const seconds = (performance.now() - started) / 1000;
    const cost = await probe.finish(Math.max(total, 1));
    rows.push({
      stage: `retention today, one day of the aged history: ${what}`,
      value: round(total / seconds, 0),
      unit: 'rows/s',
      notes: `${total} rows in ${batches} batches of ${RETENTION_BATCH_SIZE}, ${round(seconds, 1)} s; WAL ${round((cost.walBytes * total) / 1e6, 1)} MB (${cost.walBytes} B per row, ${cost.fpi} full-page images per row); ${round(total / eventsPerDay, 2)} rows per event of the day; the job's cap of ${RETENTION_MAX_BATCHES} batches a minute allows ${round((RETENTION_MAX_BATCHES * RETENTION_BATCH_SIZE) / 60, 0)} rows/s`,
    });
  }
  await withClient(server.url, (c) => c.query('CHECKPOINT'));
  const probe = await StorageProbe.start(server.url, url);
  const started = performance.now();
  await withClient(url, (c) => c.query('VACUUM webhook_inbox, webhook_inbox_attempts, outbox, outbox_attempts'));
  const cost = await probe.finish(1);
  rows.push({
    stage: 'retention today: the VACUUM after that day (what autovacuum then does)',
    value: round((performance.now() - started) / 1000, 1),
    unit: 's',
    notes: `WAL ${round(cost.walBytes / 1e6, 1)} MB, ${cost.fpi} full-page images`,
  });
  await withClient(url, (c) => c.query('UPDATE bench_aged SET forgotten_days = forgotten_days + 1'));
}

/**
 * --only=retention-rate (issue 38: retention keeps up with at least 10,000 events/s of inflow): the
 * retention job's clearing rate with its default settings, beside its floor, a plain DELETE loop over the
 * same rows (bench/lib/retention-rate.ts), each on its own copy of one fill of expired events (the aged
 * history's shape, one day of --retention-events events, 300,000 by default), alternating per round.
 */
const RETENTION_EVENTS = Number(
  process.argv.find((a) => a.startsWith('--retention-events='))?.slice('--retention-events='.length) ?? (quick ? 50_000 : 300_000),
);
/** The inflow issue 38 asks retention to keep up with. */
const RETENTION_AIM = 10_000;

async function retentionRate(server: BenchServer): Promise<void> {
  log(`retention-rate: a day of ${RETENTION_EVENTS.toLocaleString('en')} events ending ${PAST_EVERY_WINDOW_DAYS} days ago...`);
  const fill = await retentionFill(server, RETENTION_EVENTS, log);
  const events = fill.events;
  rows.push({
    stage: `retention-rate: the fill, a day of events past every retention window (copied for every pass)`,
    value: events,
    unit: 'events',
    notes: `${Object.entries(fill.rows)
      .map(([table, n]) => `${table} ${n}`)
      .join(', ')}; ${round(fill.bytes / 1024 ** 2, 0)} MiB, built in ${round(fill.buildSeconds, 0)} s`,
  });
  // The floor deletes in statements of the job's size (BENCH_SERVICE_ENV may set another).
  const batch = Number(
    (JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>).RETENTION_BATCH_SIZE ?? RETENTION_BATCH_SIZE,
  );
  const n = events.toLocaleString('en');
  try {
    for (let pass = 0; pass < rounds; pass++) {
      let job: Awaited<ReturnType<typeof clearWithJob>> | undefined;
      let floor: Awaited<ReturnType<typeof clearWithFloor>> | undefined;
      for (const side of pass % 2 ? ['floor', 'job'] : ['job', 'floor']) {
        log(`round ${pass + 1}/${rounds}: retention-rate, ${side === 'job' ? 'the retention job' : 'the floor (plain DELETE loop)'}...`);
        if (side === 'job') job = await clearWithJob(server, fill);
        else floor = await clearWithFloor(server, fill, batch);
      }
      const floorRate = events / floor!.seconds;
      const busyRate = events / job!.busySeconds;
      const pacedRate = events / job!.seconds;
      const t = job!.totals;
      rows.push({
        stage: `retention-rate: floor, a plain DELETE loop (${batch} rows per statement, the next primary keys, children in the same statement; payload days dropped), ${n} events`,
        value: round(floorRate, 0),
        unit: 'events/s',
        ratio: 1,
        reference: true,
        notes:
          `${round(floor!.seconds, 1)} s, ${floor!.statements} statements (${floor!.partitionsDropped} partitions dropped); deleted ${Object.entries(
            floor!.deleted,
          )
            .map(([table, count]) => `${table} ${count}`)
            .join(', ')} (and their children); ` + describeClearing(floor!, events),
      });
      rows.push({
        stage: `retention-rate: the retention job (RetentionService.runOnce back to back, ${job!.batchSize} rows per statement, ${job!.maxBatches} statements per kind and run), ${n} events`,
        value: round(busyRate, 0),
        unit: 'events/s',
        ratio: round(busyRate / floorRate, 2),
        notes:
          `${round(busyRate / RETENTION_AIM, 2)}x the ${RETENTION_AIM.toLocaleString('en')} events/s aim; ${job!.runs} runs, ${round(job!.busySeconds, 1)} s in them, ${t.batches} statements; ` +
          `identities ${t.identitiesDeleted}, quarantined and dead ${t.abandonedDeleted}, payload days dropped ${t.payloadDaysDropped} (legacy payloads ${t.payloadsPurged}), ` +
          `outbox ${t.outboxPruned}, orders ${t.ordersPruned}, audit ${t.auditPruned}, reconciliation runs ${t.reconciliationRunsPruned}; ` +
          describeClearing(job!, events),
      });
      rows.push({
        stage: `retention-rate: the same runs as RetentionScheduler paces them (the next run ${job!.followUpMs} ms after a capped one), ${n} events`,
        value: round(pacedRate, 0),
        unit: 'events/s',
        ratio: round(pacedRate / floorRate, 2),
        notes: `${round(job!.seconds, 1)} s from the first run's start to the last run's end; ${round(pacedRate / RETENTION_AIM, 2)}x the ${RETENTION_AIM.toLocaleString('en')} events/s aim`,
      });
      for (const [who, side, rate] of [
        ['the job', job!, busyRate],
        ['the floor', floor!, floorRate],
      ] as const) {
        rows.push({
          stage: `retention-rate: the VACUUM after ${who} (autovacuum off during the passes), ${n} events`,
          value: round(side.vacuum.seconds, 1),
          unit: 's',
          notes: `with it ${round(events / (events / rate + side.vacuum.seconds), 0)} events/s; ` + describeClearing(side.vacuum, events),
        });
      }
      rows.push({
        stage: 'retention-rate: WAL per event, the job / the floor',
        value: round(job!.walBytes / floor!.walBytes, 2),
        unit: 'x',
        notes: `${round(job!.walBytes / events, 0)} / ${round(floor!.walBytes / events, 0)} B`,
      });
    }
  } finally {
    await fill.drop();
  }
}

async function main(): Promise<void> {
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  // --aged keeps its server (and the aged history in it) in .data/; the WAL of a stage is kept for pg_walinspect to read.
  const server = agedBench
    ? await startServer({ statements: true, keptDir: AGED_DIR, settings: { wal_keep_size: '4GB', track_io_timing: 'on' } })
    : await startServer({
        statements: withStatements,
        // retention-rate reads each pass's WAL (pg_walinspect): a pass writes several hundred MB of it.
        settings: only?.includes('retention-rate') ? { wal_keep_size: '4GB' } : undefined,
      });
  if (tracingBench) collector = await new FakeCollector().start();
  statements = await StatementStats.open(server.url, withStatements || agedBench);
  log(`bench on ${server.embedded ? 'an embedded PostgreSQL' : 'DATABASE_URL'}${quick ? ' (quick)' : ''}`);
  const roundTrip = await loopbackRoundTrip();
  rows.push({
    stage: 'machine: loopback TCP round trip between two processes',
    value: roundTrip.wallUs,
    unit: 'us median',
    notes: `${roundTrip.cpuUs} us of the sender's CPU per round trip`,
  });
  try {
    if (agedBench) await agedRun(server);
    // Throughput stages run in interleaved rounds, each against the baseline of its own round.
    const throughput = !agedBench && ['ingestion', 'worker', 'drain', 'graphile', 'relay', 'encryption'].some(wanted);
    for (let pass = 1; throughput && pass <= rounds; pass++) {
      log(`round ${pass}/${rounds}: baseline (pgbench)...`);
      const base = await baseline(server, 'prepared');
      if (wanted('ingestion')) {
        await baseline(server, 'simple');
        log('ingestion, one insert per commit...');
        await ingestion(server, 'group commit off (INGEST_BATCH_MAX=1)', { INGEST_BATCH_MAX: '1' }, base);
        for (const variant of variants()) {
          log(`ingestion, group commit${variant.label ? ` [${variant.label}]` : ''}...`);
          await ingestion(server, labelled('group commit on (defaults)', variant), variant.env, base, variant.mainJs);
        }
      }
      // `worker` is both halves; `drain` or `graphile` alone when comparing variants of one.
      const worker = ['worker', 'drain', 'graphile', 'encryption'].some(wanted);
      let bound = base;
      if (worker) {
        log('worker bound (the drain statements alone)...');
        bound = await workerBound(server);
      }
      let drain: number | undefined;
      if (tracingBench && wanted('drain')) {
        const rates = new Map<Variant, number>();
        for (const variant of variants()) {
          log(`worker drain [${variant.label}]...`);
          rates.set(variant, await workerDrain(server, 1, bound, variant));
        }
        pushTracingRatios('worker drain events/s', rates);
      } else if (wanted('worker') || wanted('drain')) {
        for (const variant of variants()) {
          log(`worker drain${variant.label ? ` [${variant.label}]` : ''}...`);
          const rate = await workerDrain(server, 1, bound, variant);
          if (variant.mainJs === undefined) drain = rate;
        }
        await workerDrain(server, 2, bound);
      }
      if (wanted('worker') || wanted('graphile')) {
        log('graphile-worker...');
        // Its no-op jobs are not the same work: measured only when asked for by name.
        if (only?.includes('graphile')) {
          await graphile(server, 'defaults', bound);
          await graphile(server, 'batched', bound);
        }
        const business = await graphile(server, 'business', bound);
        if (drain !== undefined) {
          rows.push({
            stage: 'worker drain (1 instance) / graphile-worker running the same business transaction as jobs',
            value: round(drain / business, 2),
            unit: 'x',
          });
        }
      }
      if (wanted('encryption')) {
        // Payloads at rest: the same stage with and without a key ring, back to back in this round.
        log('encryption: ingestion off / on...');
        const ingestOff = await ingestion(server, 'encryption off', {}, base);
        const ingestOn = await ingestion(server, 'encryption on (PAYLOAD_KEYS, AES-256-GCM)', ENCRYPTION_ON, base);
        log('encryption: drain off / on...');
        const drainOff = await workerDrain(server, 1, bound, { label: 'encryption off', env: {}, parked: true });
        const drainOn = await workerDrain(server, 1, bound, { label: 'encryption on', env: ENCRYPTION_ON, parked: true });
        rows.push(sealingCost());
        rows.push({
          stage: 'payload encryption: throughput on / off (ingestion; drain)',
          value: round(ingestOn / ingestOff, 3),
          unit: 'x',
          notes: `ingestion ${round(ingestOn / ingestOff, 3)}x, drain ${round(drainOn / drainOff, 3)}x`,
        });
      }
      if (wanted('relay')) {
        const rates = new Map<Variant, number>();
        for (const variant of variants()) {
          log(`relay${variant.label ? ` [${variant.label}]` : ''}...`);
          rates.set(variant, await relay(server, base, variant));
        }
        pushTracingRatios('relay deliveries/s', rates);
      }
    }
    // End to end before the million-row history: its checkpoint must not land in the latency run.
    if (wanted('e2e') && !agedBench) {
      const p50s = new Map<Variant, number>();
      const cpu = new Map<Variant, number>();
      const totals = new Map<Variant, number>();
      const passes = (process.env.BENCH_BEFORE_MAIN || withFloor || process.argv.includes('--quiet-ab')) && !tracingBench ? rounds : 1;
      const floors = withFloor ? [FLOOR, FLOOR_MERGED] : [];
      const e2eVariants = [...variants(), ...floors];
      // The service's own build (not the one before, not a floor) against each floor of the same pass.
      const product = e2eVariants.find((v) => v.mainJs === undefined)!;
      for (let pass = 0; pass < passes; pass++) {
        for (const variant of pass % 2 ? [...e2eVariants].reverse() : e2eVariants) {
          log(`end to end${variant.label ? ` [${variant.label}]` : ''}...`);
          const { p50, serviceUs, totalUs } = await endToEnd(server, variant);
          p50s.set(variant, p50);
          cpu.set(variant, serviceUs);
          totals.set(variant, totalUs);
        }
        for (const floor of floors) {
          rows.push({
            stage: `end to end CPU per event (service + PostgreSQL + load and sink): the service / ${floor.label.replace(/^floor/, 'the floor')}`,
            value: round(totals.get(product)! / totals.get(floor)!, 2),
            unit: 'x',
            notes: `${totals.get(product)} / ${totals.get(floor)} us; the service's process alone over the floor's: ${round(cpu.get(product)! / cpu.get(floor)!, 2)}x (${cpu.get(product)} / ${cpu.get(floor)} us)`,
          });
        }
      }
      pushTracingRatios('end to end service CPU per event', cpu);
      pushTracingRatios('end to end p50 latency', p50s);
    }
    if (only?.includes('fairness')) {
      // Only by name: about a minute per run. Each pass alternates the variants' order.
      for (let pass = 0; pass < rounds; pass++) {
        const order = pass % 2 ? [...variants()].reverse() : variants();
        const named = process.argv
          .find((a) => a.startsWith('--fairness='))
          ?.slice('--fairness='.length)
          .split(',');
        for (const scenario of FAIRNESS_SCENARIOS.filter((s) => s === 'idle' || !named || named.includes(s))) {
          for (const variant of order) {
            log(`fairness: ${scenario}${variant.label ? ` [${variant.label}]` : ''}...`);
            await fairness(server, variant, scenario);
          }
        }
      }
    }
    if (only?.includes('rejections')) {
      // Only by name: a minute per variant. Each pass alternates the variants' order.
      for (let pass = 0; pass < rounds; pass++) {
        const variants = pass % 2 ? [LOG_ALL, LOG_ON, LOG_OFF] : [LOG_OFF, LOG_ON, LOG_ALL];
        const results = new Map<string, FloodResult>();
        for (const variant of variants) {
          log(`rejected-request flood: ${variant.label}...`);
          const result = await rejectionFlood(server, variant, quick ? 20 : FLOOD_SECONDS);
          results.set(variant.label, result);
          rows.push({
            stage: `rejected-request flood (${FLOOD_REQUESTS} bad signatures a minute, valid at ${VALID_PER_SECOND}/s): ${variant.label}, valid p99`,
            value: result.valid.p99,
            unit: 'ms p99',
            notes: describeFlood(result),
          });
        }
        const off = results.get(LOG_OFF.label)!;
        const on = results.get(LOG_ON.label)!;
        rows.push({
          stage: 'rejected-request flood: valid p99, log on (defaults) / log off',
          value: round(on.valid.p99 / off.valid.p99, 2),
          unit: 'x',
          notes: `rows kept ${on.rows} (off ${off.rows}); WAL on - off ${round((on.walBytes - off.walBytes) / 1024, 0)} KiB; service CPU on / off ${round(on.serviceCpuMs / off.serviceCpuMs, 2)}`,
        });
      }
    }
    if (only?.includes('retention-rate') && !agedBench) await retentionRate(server);
    if (wanted('slowloris') && !agedBench) {
      log('valid requests among slow connections...');
      await slowConnections(server);
    }
    if (wanted('hygiene') && !agedBench) {
      log('claim with a large history...');
      await claimHygiene(server);
    }
    if (wanted('limited-claim') && !agedBench) {
      log('claim with worker limits...');
      await limitedClaimCost(server);
    }
  } finally {
    await server.stop();
    await collector?.stop();
  }
  if (collector)
    rows.push({
      stage: 'fake collector: OTLP exports received (all traced stages)',
      value: collector.exports,
      unit: 'requests',
      notes: `${round(collector.bytes / 1e6, 1)} MB of spans`,
    });
  const table = summary();
  print(table);
  const file = join(__dirname, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { at: new Date().toISOString(), quick, rounds, node: process.version, table, samples: Object.fromEntries(samples) },
      null,
      2,
    ),
  );
  log(`saved ${file}`);
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
