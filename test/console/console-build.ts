import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { consoleDir } from '../../src/console/console-static';

const ROOT = resolve(__dirname, '../..');
const TAG = join(tmpdir(), `webhook-inbox-console-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`);
/** A lock older than this was left by a killed run. */
const STALE_MS = 5 * 60_000;

/**
 * Builds the console exactly as `npm run build` does (vite, a second or two) and returns where it went.
 * Jest runs suites in parallel workers: vite refuses a second build of the project while one runs, and
 * each build empties the folder another suite may be serving. So the workers of one jest run (one
 * parent process) build once, one at a time, under a lock directory.
 */
export function buildConsole(): string {
  const built = `${TAG}.${process.ppid}.built`;
  withLock(`${TAG}.lock`, () => {
    if (existsSync(built)) return;
    execFileSync(join(ROOT, 'node_modules/.bin/vite'), ['build', '--config', 'console/vite.config.mts', '--logLevel', 'error'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
    writeFileSync(built, '');
  });
  return consoleDir();
}

function withLock(lock: string, work: () => void): void {
  const deadline = Date.now() + 2 * STALE_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (Date.now() - lockedAt(lock) > STALE_MS) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`the console build lock ${lock} is still held`);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
  try {
    work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockedAt(lock: string): number {
  try {
    return statSync(lock).mtimeMs;
  } catch {
    return Date.now();
  }
}
