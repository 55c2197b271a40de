import { execFile, spawn } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort, letPostgresUserTraverse } from '../../../src/database/embedded-postgres';
import { sleep } from './http';

const run = promisify(execFile);
const ROOT = process.getuid?.() === 0;

/**
 * The machine's PostgreSQL binaries (Debian's), for both servers: pg_basebackup needs the
 * primary's major version, and the embedded-postgres package ships no pg_basebackup.
 */
export function postgresBinDir(): string {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  const base = '/usr/lib/postgresql';
  const majors = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'pg_basebackup'))) : [];
  if (!majors.length) throw new Error(`no PostgreSQL binaries with pg_basebackup under ${base} (set PG_BINDIR)`);
  return join(base, majors.sort((a, b) => Number(b) - Number(a))[0], 'bin');
}

/**
 * initdb and postgres refuse to run as root: as root they run as the `postgres` user. Done at the
 * tool's exit, not when its output closes: a server that `pg_ctl start` leaves running may hold it.
 */
function pgTool(tool: string, args: string[]): Promise<void> {
  const binary = join(postgresBinDir(), tool);
  const [file, argv] = ROOT ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      child.stdout.destroy();
      child.stderr.destroy();
      if (code === 0) resolve();
      else reject(new Error(`${tool} ${args[0]} exited ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

class Server {
  port = 0;
  constructor(
    readonly name: string,
    readonly dir: string,
  ) {}

  get log(): string {
    return `${this.dir}.log`;
  }

  configure(settings: Record<string, string | number>): void {
    // Appended: a later line wins over the copy pg_basebackup took of the primary's.
    appendFileSync(
      join(this.dir, 'postgresql.conf'),
      Object.entries(settings)
        .map(([k, v]) => `${k} = '${v}'\n`)
        .join(''),
    );
  }

  start(): Promise<void> {
    return pgTool('pg_ctl', ['start', '-w', '-t', '60', '-D', this.dir, '-l', this.log]);
  }

  postmasterPid(): number {
    return Number(readFileSync(join(this.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async query<T = any>(sql: string, params: unknown[] = [], database = 'faults'): Promise<T[]> {
    const client = new Client({ connectionString: this.url(database), connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * A primary and a streaming standby made from it with `pg_basebackup -R`, on free loopback ports:
 * for the failover scenario. `synchronous`: every commit waits until the standby has flushed it
 * (synchronous_standby_names = '*', synchronous_commit = on).
 */
export class ReplicatedPostgres {
  readonly primary: Server;
  readonly standby: Server;
  private paused?: number;
  private primaryKilled = false;

  constructor(
    private readonly dir: string,
    readonly synchronous: boolean,
  ) {
    this.primary = new Server('primary', join(dir, 'primary'));
    this.standby = new Server('standby', join(dir, 'standby'));
  }

  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    if (ROOT) {
      letPostgresUserTraverse(this.dir);
      chownSync(this.dir, this.uid(), this.gid());
    }
    await pgTool('initdb', [
      '-D',
      this.primary.dir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-sync',
      '--no-instructions',
    ]);
    this.primary.port = await freePort();
    this.primary.configure({
      port: this.primary.port,
      listen_addresses: '127.0.0.1',
      unix_socket_directories: '',
      max_connections: 100,
      wal_keep_size: '512MB',
      // Set once the standby streams: until then every commit (CREATE DATABASE too) would wait for one.
      synchronous_standby_names: '',
      synchronous_commit: 'on',
    });
    await this.primary.start();
    await this.primary.query('CREATE DATABASE faults', [], 'postgres');

    await pgTool('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.primary.port),
      '-U',
      'postgres',
      '-D',
      this.standby.dir,
      '-R',
      '-X',
      'stream',
      '--checkpoint=fast',
    ]);
    this.standby.port = await freePort();
    // Once promoted it has no standby of its own: with '*' here every commit would wait for one forever.
    this.standby.configure({ port: this.standby.port, synchronous_standby_names: '' });
    await this.standby.start();

    if (this.synchronous) {
      await this.primary.query(`ALTER SYSTEM SET synchronous_standby_names = '*'`);
      await this.primary.query('SELECT pg_reload_conf()');
    }
    const want = this.synchronous ? 'sync' : 'async';
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await this.primary.query<{ state: string; sync_state: string }>('SELECT state, sync_state FROM pg_stat_replication');
      if (rows.some((r) => r.state === 'streaming' && r.sync_state === want)) return;
      if (Date.now() > deadline) throw new Error(`standby not streaming (${want}) 30 s after it started: ${JSON.stringify(rows)}`);
      await sleep(100);
    }
  }

  /** libpq's multi-host syntax, the standby listed first: the service must find the primary by asking. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.standby.port},127.0.0.1:${this.primary.port}/faults?target_session_attrs=read-write`;
  }

  /**
   * Stops the primary's WAL sender (SIGSTOP), as if the network between the two had stopped:
   * commits made from now on are on the primary only. Asynchronous replication acknowledges them
   * anyway; synchronous replication makes them wait. (Stopping the standby's receiver instead
   * would not do: what the sender had written still waits in the socket, and arrives later.)
   */
  async pauseReplication(): Promise<void> {
    const [row] = await this.primary.query<{ pid: number | null }>('SELECT pid FROM pg_stat_replication');
    if (!row?.pid) throw new Error('the primary has no WAL sender');
    this.paused = row.pid;
    process.kill(row.pid, 'SIGSTOP');
  }

  /** The primary's machine is lost: SIGKILL to the postmaster and every process it started, at once. */
  async killPrimary(): Promise<void> {
    const postmaster = this.primary.postmasterPid();
    this.primaryKilled = true;
    const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(postmaster)]);
    for (const pid of [
      postmaster,
      ...stdout
        .split('\n')
        .map(Number)
        .filter((p) => p > 0),
    ]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited already
      }
    }
  }

  /** `pg_ctl promote`, waiting until the standby accepts writes. */
  async promoteStandby(): Promise<void> {
    await pgTool('pg_ctl', ['promote', '-w', '-t', '60', '-D', this.standby.dir]);
  }

  /** Stops what still runs (the promoted standby, the primary if it was never killed) and removes the directories. */
  async destroy(): Promise<void> {
    if (this.paused !== undefined && !this.primaryKilled) process.kill(this.paused, 'SIGCONT');
    // A killed primary's pid file stays behind, and its pid may belong to another process by now.
    for (const server of this.primaryKilled ? [this.standby] : [this.standby, this.primary]) {
      if (existsSync(join(server.dir, 'postmaster.pid')))
        await pgTool('pg_ctl', ['stop', '-m', 'immediate', '-D', server.dir]).catch(() => undefined);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private uid(): number {
    return Number(readFileSync('/etc/passwd', 'utf8').match(/^postgres:[^:]*:(\d+):/m)?.[1]);
  }

  private gid(): number {
    return Number(readFileSync('/etc/passwd', 'utf8').match(/^postgres:[^:]*:\d+:(\d+):/m)?.[1]);
  }
}
