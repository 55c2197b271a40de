import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, WriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../src/database/embedded-postgres';
import { send, sleep } from './http';

/** One compiled service process (`node dist/src/main.js`, all roles) on a port it keeps across restarts. */
export class ServiceInstance {
  url = '';
  port = 0;
  child?: ChildProcess;
  starts = 0;
  kills = 0;
  /** Exits the suite did not cause once the instance was serving: crashes. */
  readonly crashes: string[] = [];
  /** Start attempts that failed (e.g. the database was down at that moment). */
  failedStarts = 0;
  private log?: WriteStream;
  private expectExit = false;
  private serving = false;

  constructor(
    readonly name: string,
    private readonly env: Record<string, string>,
    readonly logFile: string,
    /** The compiled entry point (a snapshot of dist/, so a rebuild during the run changes nothing). */
    private readonly main: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  get up(): boolean {
    return this.serving && this.pid !== undefined;
  }

  /** Starts the process and resolves once /health/live answers; retries a failed start. */
  async start(deadlineMs = 90_000): Promise<void> {
    this.port ||= await freePort();
    this.url = `http://127.0.0.1:${this.port}`;
    this.log ??= createWriteStream(this.logFile, { flags: 'a' });
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      if (await this.tryStart(deadline)) return;
      this.failedStarts++;
      if (Date.now() > deadline) throw new Error(`${this.name} did not start`);
      await sleep(500);
    }
  }

  private async tryStart(deadline: number): Promise<boolean> {
    this.expectExit = false;
    this.serving = false;
    const child = spawn(process.execPath, [this.main], {
      env: { PATH: process.env.PATH, ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout!.pipe(this.log!, { end: false });
    child.stderr!.pipe(this.log!, { end: false });
    child.once('exit', (code, signal) => {
      if (this.serving && !this.expectExit && this.child === child) this.crashes.push(`${this.name} exited code=${code} signal=${signal}`);
      this.serving = false;
    });
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) return false;
      const res = await send(`${this.url}/health/live`, { timeoutMs: 1_000, agent: false });
      if (res.status === 200) {
        this.starts++;
        this.serving = true;
        return true;
      }
      await sleep(100);
    }
    child.kill('SIGKILL');
    return false;
  }

  /** SIGKILL: no shutdown hook runs, in-flight transactions are cut. */
  async kill(): Promise<void> {
    if (await this.terminate('SIGKILL')) this.kills++;
  }

  /** SIGTERM, and SIGKILL if the service has not exited 15 s later. */
  async stop(): Promise<void> {
    await this.terminate('SIGTERM', 15_000);
  }

  /** Sends `signal` and waits for the exit; false when nothing was running. */
  private async terminate(signal: NodeJS.Signals, killAfterMs?: number): Promise<boolean> {
    const child = this.child;
    if (!child || this.pid === undefined) return false;
    this.expectExit = true;
    this.serving = false;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await exited;
    clearTimeout(timer);
    return true;
  }

  async closeLog(): Promise<void> {
    const log = this.log;
    this.log = undefined;
    if (log) await new Promise<void>((r) => log.end(() => r()));
  }
}

export function createFleet(count: number, env: Record<string, string>, logDir: string, main: string): ServiceInstance[] {
  return Array.from({ length: count }, (_, i) => new ServiceInstance(`svc${i + 1}`, env, join(logDir, `svc${i + 1}.log`), main));
}

/**
 * The destinations the compiled service registers (a team's own included), read from
 * `GET /admin/destinations` of one instance started outside production (where a
 * destination without a URL goes to the dev sink instead of stopping the start).
 */
export async function registeredDestinations(
  env: Record<string, string>,
  logDir: string,
  main: string,
  operatorToken: string,
): Promise<string[]> {
  const { NODE_ENV: _production, ...dev } = env;
  const probe = new ServiceInstance('destinations-probe', { ...dev, ROLES: 'api' }, join(logDir, 'destinations-probe.log'), main);
  await probe.start();
  try {
    const res = await send(`${probe.url}/admin/destinations`, { headers: { authorization: `Bearer ${operatorToken}` }, timeoutMs: 10_000 });
    const items = (res.json as { items?: { name: string; registered: boolean }[] } | undefined)?.items;
    if (res.status !== 200 || !items) throw new Error(`GET /admin/destinations answered ${res.status}`);
    return items.filter((d) => d.registered).map((d) => d.name);
  } finally {
    await probe.stop();
    await probe.closeLog();
  }
}
