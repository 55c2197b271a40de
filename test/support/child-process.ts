import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs a TypeScript file in its own Node process (for crash tests that SIGKILL it); resolves with how it ended. */
export function runTsChild(script: string, args: string[], env: Record<string, string> = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', 'ts-node/register', script, ...args], {
      cwd: join(__dirname, '..', '..'),
      env: { ...process.env, ...env, TS_NODE_TRANSPILE_ONLY: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, output }));
  });
}
