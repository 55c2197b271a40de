/**
 * The failover scenario (issue 35; `npm run test:faults` runs it after the fault suite, or alone:
 * `ts-node --transpile-only test/faults/run-failover.ts` after `npm run build`).
 *
 * Two PostgreSQL servers of the machine's own binaries: a primary and a streaming standby made
 * with `pg_basebackup -R`. Two compiled service instances whose DATABASE_URL lists both (the
 * standby first), under Stripe-signed load. Then the primary's machine is lost: the standby's WAL
 * receiver is stopped for a moment (commits of that moment are on the primary only), the primary is
 * SIGKILLed with every process it started, and a second later the standby is promoted
 * (`pg_ctl promote`); the old primary is never started again. Run twice: with synchronous
 * replication (the documented setting) every acknowledged event must be on the new primary; with
 * asynchronous replication the run reports how many acknowledged events were lost.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { signRequest } from '../../src/cli/sign-request';
import { destinationEnv, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { send, sleep } from './lib/http';
import { ENDPOINT, expectedStatus, LoadGenerator, SCOPE, TENANT } from './lib/load-generator';
import { quiesce } from './lib/quiesce';
import { ReplicatedPostgres } from './lib/replicated-postgres';
import { Report } from './lib/report';
import { createFleet, ServiceInstance } from './lib/service-fleet';

const LOAD_BEFORE_MS = 5_000;
/** How long the standby receives nothing before the primary dies: what asynchronous replication can lose. */
const REPLICATION_PAUSED_MS = 1_500;
/** A failover manager's detection time (pg_auto_failover, Patroni: seconds). */
const PROMOTE_AFTER_MS = 1_000;
const LOAD_AFTER_MS = 4_000;
const ACCEPTING_WITHIN_MS = 15_000;

const RUN_ID = randomBytes(3).toString('hex');
const SECRET = `whsec_failover_${randomBytes(12).toString('hex')}`;
const OPERATOR_TOKEN = `failover-operator-${randomBytes(16).toString('hex')}`;
const runDir = join(__dirname, '..', '..', '.data', `failover-${RUN_ID}`);
const report = new Report();

interface Figures {
  acked: number;
  lost: number;
  lostIds: string[];
  answers503: number;
  acceptingAfterMs: number | undefined;
  requests: number;
  otherServerErrors: string[];
  wrongOrders: string[];
  repeatedEffects: number;
  missingEffects: number;
  keyReuse: number;
  crashes: string[];
  quiet: { ok: boolean; ms: number; open: string };
  oldPrimaryRunning: boolean;
}

async function scenario(synchronous: boolean): Promise<Figures> {
  const mode = synchronous ? 'sync' : 'async';
  const dir = join(runDir, mode);
  mkdirSync(dir, { recursive: true });
  const endpointsFile = join(dir, 'endpoints.json');
  writeFileSync(
    endpointsFile,
    JSON.stringify({
      endpoints: [{ id: ENDPOINT, provider: 'stripe', tenantId: TENANT, secrets: [{ label: 'failover', env: 'FAILOVER_STRIPE_SECRET' }] }],
    }),
  );
  const pg = new ReplicatedPostgres(join(dir, 'postgres'), synchronous);
  await pg.start();
  log(`${mode}: primary :${pg.primary.port}, standby :${pg.standby.port} streaming`);
  const erp = await startFakeErp();
  const email = await startFakeEmail();
  const fleet = createFleet(
    2,
    {
      NODE_ENV: 'production',
      FAILOVER_STRIPE_SECRET: SECRET,
      DATABASE_URL: pg.url,
      DATABASE_POOL_SIZE: '10',
      WEBHOOK_ENDPOINTS_FILE: endpointsFile,
      ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN}`,
      ...destinationEnv({ erp: erp.url, email: email.sendUrl }),
      LOG_LEVEL: 'warn',
      WORKER_POLL_MS: '250',
      WORKER_LEASE_MS: '3000',
      RETRY_BASE_MS: '100',
      RETRY_MAX_MS: '1000',
      RELAY_POLL_MS: '250',
      RELAY_TIMEOUT_MS: '1000',
      RELAY_LEASE_MS: '3000',
    },
    dir,
    join(runDir, 'dist', 'src', 'main.js'),
  );
  try {
    await Promise.all(fleet.map((s) => s.start()));
    const load = new LoadGenerator(fleet, {
      runId: `${RUN_ID}${mode}`,
      secret: SECRET,
      operatorToken: OPERATOR_TOKEN,
      payloadMarker: 'failover',
      piiMarker: 'failover',
      random: Math.random,
    });
    let stop = false;
    const running = load.run(6, () => stop);
    await sleep(LOAD_BEFORE_MS);

    await pg.pauseReplication();
    await sleep(REPLICATION_PAUSED_MS);
    const oldPrimary = pg.primary.postmasterPid();
    await pg.killPrimary();
    const killed503 = load.stats.byStatus['webhook 503'] ?? 0;
    log(`${mode}: primary killed after ${load.stats.acked} acknowledged events; standby promoted in ${PROMOTE_AFTER_MS / 1000} s`);
    await sleep(PROMOTE_AFTER_MS);
    await pg.promoteStandby();
    const promotedAt = Date.now();

    const probes = await untilAccepting(fleet, promotedAt + 60_000, `${RUN_ID}${mode}`);
    const acceptingAfterMs = probes.acceptedAt === undefined ? undefined : probes.acceptedAt - promotedAt;
    const answers503 = (load.stats.byStatus['webhook 503'] ?? 0) - killed503 + probes.answers503;
    log(
      `${mode}: accepting again ${acceptingAfterMs === undefined ? 'never' : `${acceptingAfterMs} ms`} after the promotion, ${answers503} x 503 in between`,
    );
    await sleep(LOAD_AFTER_MS);
    stop = true;
    await running;

    const db = pg.standby; // the new primary
    // Only the synchronous run is taken to its end: what the asynchronous one lost stays lost.
    const quiet = synchronous ? await quiesce(db, 60_000) : { ok: true, ms: 0, open: 'not waited for' };
    if (synchronous) log(`${mode}: quiescent after ${(quiet.ms / 1000).toFixed(1)} s`);
    const acked = [...load.ackedEventIds, ...probes.acked];
    const stored = new Set(
      (await db.query<{ event_id: string }>('SELECT event_id FROM webhook_inbox WHERE source_scope = $1', [SCOPE])).map((r) => r.event_id),
    );
    const lostIds = acked.filter((id) => !stored.has(id));

    const orders = new Map(
      (await db.query<{ id: string; status: string }>('SELECT id, status FROM orders WHERE tenant_id = $1', [TENANT])).map((o) => [
        o.id,
        o.status,
      ]),
    );
    const wrongOrders: string[] = [];
    let missingEffects = 0;
    for (const o of load.orders.filter((x) => x.created)) {
      const want = expectedStatus(o);
      if (orders.get(o.id) !== want) wrongOrders.push(`${o.id} is ${orders.get(o.id)}, expected ${want}`);
      if (want !== 'awaiting_payment' && !erp.effects.has(`erp:order-paid:${TENANT}:${o.id}`)) missingEffects++;
    }
    // One business change (an order paid, a receipt sent) must reach its destination once, under one key.
    const changes = new Map<string, number>();
    for (const body of [...erp.effects.values(), ...email.effects.values()]) {
      const p = JSON.parse(body);
      const change = p.template ? `${p.template}:${p.data?.orderId}` : `${p.type}:${p.tenantId}:${p.orderId}`;
      changes.set(change, (changes.get(change) ?? 0) + 1);
    }
    return {
      acked: acked.length,
      lost: lostIds.length,
      lostIds,
      answers503,
      acceptingAfterMs,
      requests: load.stats.requests,
      otherServerErrors: Object.entries(load.stats.byStatus)
        .filter(([k]) => /\s5\d\d$/.test(k) && !k.endsWith(' 503'))
        .map(([k, n]) => `${k} x${n}`),
      wrongOrders,
      repeatedEffects: [...changes.values()].filter((n) => n > 1).length,
      missingEffects,
      keyReuse: erp.keyReuseConflicts + email.keyReuseConflicts,
      crashes: fleet.flatMap((s) => s.crashes),
      quiet,
      oldPrimaryRunning: isRunning(oldPrimary),
    };
  } finally {
    for (const svc of fleet) await svc.stop();
    for (const svc of fleet) await svc.closeLog();
    await erp.close();
    await email.close();
    await pg.destroy();
    log(`${mode}: stopped`);
  }
}

/** Sends a fresh signed event to every instance until each has answered 200; counts the 503s before. */
async function untilAccepting(
  fleet: ServiceInstance[],
  deadline: number,
  tag: string,
): Promise<{ acceptedAt?: number; answers503: number; acked: string[] }> {
  const accepting = new Set<ServiceInstance>();
  const acked: string[] = [];
  let answers503 = 0;
  let n = 0;
  while (accepting.size < fleet.length && Date.now() < deadline) {
    await Promise.all(
      fleet
        .filter((svc) => !accepting.has(svc))
        .map(async (svc) => {
          const id = `evt_probe_${tag}_${++n}`;
          const body = JSON.stringify({
            id,
            object: 'event',
            type: 'payment_intent.created',
            created: Math.floor(Date.now() / 1000),
            livemode: false,
            data: { object: {} },
          });
          const res = await send(`${svc.url}/webhooks/${ENDPOINT}`, {
            method: 'POST',
            headers: signRequest('stripe', SECRET, body).headers,
            body,
            timeoutMs: 5_000,
          });
          if (res.status === 200) {
            accepting.add(svc);
            acked.push(id);
          } else if (res.status === 503) answers503++;
        }),
    );
    if (accepting.size < fleet.length) await sleep(100);
  }
  return { acceptedAt: accepting.size === fleet.length ? Date.now() : undefined, answers503, acked };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  mkdirSync(runDir, { recursive: true });
  cpSync(join(__dirname, '..', '..', 'dist'), join(runDir, 'dist'), { recursive: true });
  const sync = await scenario(true);
  const async_ = await scenario(false);

  const line = (f: Figures) =>
    `${f.requests} webhook requests, ${f.acked} acknowledged, ${f.lost} acknowledged and lost, ${f.answers503} x 503 between the kill and acceptance, ` +
    `every instance accepting ${f.acceptingAfterMs === undefined ? 'never' : `${f.acceptingAfterMs} ms`} after the promotion`;
  report.section('failover (sync)', [line(sync)]);
  report.section('failover (async)', [
    line(async_) + (async_.lostIds.length ? `; lost e.g. ${async_.lostIds.slice(0, 2).join(', ')}` : ''),
  ]);
  report.check(
    'failover (sync): every acknowledged event is on the new primary',
    sync.lost === 0 && sync.acked > 0,
    `${sync.lost} of ${sync.acked} lost ${sync.lostIds.slice(0, 3).join(', ')}`,
  );
  report.check(
    `failover (sync): accepting again within ${ACCEPTING_WITHIN_MS / 1000} s of the promotion, 503 (never another 5xx) before`,
    sync.acceptingAfterMs !== undefined && sync.acceptingAfterMs <= ACCEPTING_WITHIN_MS && sync.otherServerErrors.length === 0,
    `${sync.acceptingAfterMs ?? 'never'} ms, ${sync.answers503} x 503; other 5xx: ${sync.otherServerErrors.join(', ') || 'none'}`,
  );
  report.check(
    'failover (sync): every order in the state its events allow, each effect once',
    sync.quiet.ok && sync.wrongOrders.length === 0 && sync.repeatedEffects === 0 && sync.missingEffects === 0 && sync.keyReuse === 0,
    `${sync.quiet.open}; wrong orders ${sync.wrongOrders.length} ${sync.wrongOrders.slice(0, 2).join('; ')}; repeated ${sync.repeatedEffects}, missing ${sync.missingEffects}, key reused ${sync.keyReuse}`,
  );
  report.check(
    'failover (both runs): no service exited, the old primary stayed down',
    [sync, async_].every((f) => f.crashes.length === 0 && !f.oldPrimaryRunning && f.acceptingAfterMs !== undefined),
    [...sync.crashes, ...async_.crashes].slice(0, 3).join('; '),
  );
  report.print(`failover, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (report.failed) {
    log(`logs kept in ${runDir}`);
    process.exitCode = 1;
  } else {
    rmSync(runDir, { recursive: true, force: true });
  }
}

function log(message: string): void {
  process.stdout.write(`[failover ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error) => {
    process.stderr.write(`failover scenario aborted: ${(error as Error)?.stack ?? error}\n`);
    process.exit(2);
  },
);
