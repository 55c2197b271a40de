import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const ROOT = resolve(__dirname, '..');

/**
 * Regenerates in a child process: openapi-typescript loads ESM-only dependencies,
 * which Node requires natively but jest's CommonJS runtime cannot.
 */
async function check(): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(
      resolve(ROOT, 'node_modules/.bin/ts-node'),
      ['--transpile-only', 'src/console-api-types.ts', '--check'],
      {
        cwd: ROOT,
      },
    );
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

describe("the console's generated API types", () => {
  it('match the OpenAPI document the server builds now (else: npm run console:api-types)', async () => {
    const result = await check();
    expect(result).toEqual({ code: 0, stderr: '' });
  }, 120_000);
});
