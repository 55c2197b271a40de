import { ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/database/embedded-postgres';

export const BENCH_STRIPE_SECRET = 'whsec_bench_secret_not_real';
export const BENCH_TOKEN = 'bench-operator-token-0123456789';

export interface Service {
  url: string;
  process: ChildProcess;
  /** Peak resident set size so far, in MiB (VmHWM). */
  peakRssMiB(): number;
  /** CPU time used so far (user + system), in milliseconds. */
  cpuMs(): number;
  /** Write system calls so far. */
  writes(): number;
  stop(): Promise<void>;
}

/** The provider API key the fairness stage's reconciliation variant reads acme's events with (a local fake). */
export const BENCH_STRIPE_API_KEY = 'sk_test_bench_fairness_0123456789';

/** `acmeApiUrl`: acme's endpoint reads a (fake) Stripe API there, for reconciliation runs requested by the bench. */
function endpointsFile(acmeApiUrl?: string, acmePerSecond?: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'wi-bench-')), 'endpoints.json');
  writeFileSync(
    file,
    JSON.stringify({
      endpoints: [
        {
          id: 'stripe-acme',
          provider: 'stripe',
          tenantId: 'acme',
          // Named by an environment variable, as production requires of a secret.
          secrets: [{ label: 'bench', env: 'BENCH_STRIPE_SECRET' }],
          toleranceSeconds: 600,
          ...(acmeApiUrl && {
            // confirm off: the fake lists events only, it has no objects to read.
            api: { env: 'STRIPE_API_KEY', baseUrl: acmeApiUrl, confirm: false, reconcile: { enabled: false, lookbackHours: 1 } },
          }),
        },
        // A second tenant: the fairness stage's steady sender beside acme's burst.
        {
          id: 'stripe-bravo',
          provider: 'stripe',
          tenantId: 'bravo',
          secrets: [{ label: 'bench', env: 'BENCH_STRIPE_SECRET' }],
          toleranceSeconds: 600,
        },
      ],
      ...(acmePerSecond && { tenants: [{ id: 'acme', limits: { perSecond: Number(acmePerSecond), burst: Number(acmePerSecond) } }] }),
    }),
  );
  return file;
}

/** /proc/<pid>/stat fields after the command name: utime, stime, cutime, cstime in milliseconds. */
function cpuFields(pid: number | 'self'): { own: number; children: number } {
  // Fields 14-17 of /proc/<pid>/stat, in clock ticks (100 per second on Linux).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { own: (Number(fields[11]) + Number(fields[12])) * 10, children: (Number(fields[13]) + Number(fields[14])) * 10 };
}

/**
 * postgresCpuMs() by process: the backends (one per connection), each background process by its
 * title (walwriter, checkpointer, autovacuum worker, io worker, ...) and the exited ones the
 * postmaster reaped. What a stage's PostgreSQL CPU was spent on besides the statements.
 */
export function postgresCpuByRole(): Map<string, number> {
  const byRole = new Map<string, number>();
  forEachPostgres((pid) => {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    const { own, children } = cpuFields(pid);
    const role = !title.startsWith('postgres: ')
      ? 'postmaster'
      : /\d+\.\d+\.\d+\.\d+\(\d+\)|\[local\]/.test(title)
        ? 'backends'
        : title
            .slice(10)
            .replace(/^\d+\/\w+: /, '')
            .replace(/ \d+$/, '');
    byRole.set(role, (byRole.get(role) ?? 0) + own);
    if (children > 0) byRole.set('exited', (byRole.get('exited') ?? 0) + children);
  });
  return byRole;
}

let serverPid: number | undefined;

/**
 * Counts only the bench's own server from now on: its postmaster and the postmaster's children. On a
 * machine shared with other engineers, every `postgres` process includes their test servers' work.
 */
export function onlyPostgresServer(postmasterPid: number): void {
  serverPid = postmasterPid;
}

function isBenchServer(pid: string): boolean {
  if (serverPid === undefined || Number(pid) === serverPid) return true;
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === serverPid;
}

/** Calls `fn` with the pid of every live `postgres` process (of the bench's server, once known); one that exits while it is read is skipped. */
function forEachPostgres(fn: (pid: number) => void): void {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres' && isBenchServer(pid)) fn(Number(pid));
    } catch {
      // Exited while we looked.
    }
  }
}

/** Write system calls of one process so far (each socket write to PostgreSQL, a client or the sink is one). */
export function processWrites(pid: number): number {
  return Number(/syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
}

/** Write system calls of every live `postgres` process (a backend that ended meanwhile is not counted). */
export function postgresWrites(): number {
  let total = 0;
  forEachPostgres((pid) => (total += processWrites(pid)));
  return total;
}

/** Busy CPU time of the whole machine so far (every process and the kernel, /proc/stat), in milliseconds: the cross-check of the per-process sums. */
export function machineBusyMs(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait.
  return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]) * 10;
}

/** CPU time (user + system) of one process so far, in milliseconds. */
export function processCpuMs(pid: number): number {
  return cpuFields(pid).own;
}

/** CPU time of this process's exited and waited-for children (pgbench), in milliseconds. */
export function childrenCpuMs(): number {
  return cpuFields('self').children;
}

/**
 * CPU time of PostgreSQL on this machine, in milliseconds: every live `postgres`
 * process plus the exited ones the postmaster reaped (its children's time), so
 * backends that end during a stage still count. The bench's database runs here
 * (embedded or 127.0.0.1): a difference over a stage is the database's share of it.
 */
export function postgresCpuMs(): number {
  let total = 0;
  forEachPostgres((pid) => {
    const { own, children } = cpuFields(pid);
    total += own + children;
  });
  return total;
}

/**
 * Starts the compiled service (`node dist/src/main.js`, or `mainJs`: another build, e.g. the
 * commit before a change, for an A/B in the same run) as its own process and waits until it answers.
 */
export async function startService(databaseUrl: string, env: Record<string, string> = {}, mainJs?: string): Promise<Service> {
  const port = await freePort();
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the service where the time goes.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const script = mainJs ?? join(__dirname, '..', '..', 'dist', 'src', 'main.js');
  // A TypeScript entry (the end-to-end floor) runs through ts-node, which costs only its start-up.
  const loader = script.endsWith('.ts') ? ['-r', 'ts-node/register/transpile-only'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, script], {
    // As a user runs it: production mode and the default LOG_LEVEL (info). Until issue 38 the bench ran
    // NODE_ENV=development with LOG_LEVEL=warn; `--quiet-ab` runs that beside this (docs/performance.md).
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      WEBHOOK_ENDPOINTS_FILE: endpointsFile(env.BENCH_ACME_API_URL, env.BENCH_ACME_PER_SECOND),
      ...(env.BENCH_ACME_API_URL && { STRIPE_API_KEY: BENCH_STRIPE_API_KEY, PROVIDER_API_ALLOW_HTTP: 'true' }),
      BENCH_STRIPE_SECRET,
      ADMIN_TOKENS: `bench:operator:${BENCH_TOKEN}`,
      // Production requires every registered destination's URL; stages that deliver pass their sink's.
      ERP_URL: 'http://127.0.0.1:9/erp',
      EMAIL_URL: 'http://127.0.0.1:9/email',
      // BENCH_SERVICE_ENV='{"INGEST_FLUSHERS":"4"}' tries other settings; a stage's own settings still win.
      ...(JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${url}/health/live`);
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) throw new Error('service did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    process: child,
    peakRssMiB: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    cpuMs: () => {
      return processCpuMs(child.pid!);
    },
    writes: () => processWrites(child.pid!),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
