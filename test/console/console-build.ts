import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { consoleDir } from '../../src/console/console-static';

const ROOT = resolve(__dirname, '../..');

/** Builds the console exactly as `npm run build` does (vite, a second or two) and returns where it went. */
export function buildConsole(): string {
  execFileSync(join(ROOT, 'node_modules/.bin/vite'), ['build', '--config', 'console/vite.config.mts', '--logLevel', 'error'], {
    cwd: ROOT,
    stdio: 'pipe',
  });
  return consoleDir();
}
