import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/database/embedded-postgres';
import { signStripe, stripeEvent } from '../support/signers';
import { waitFor } from '../support/wait-for';

const SECRET = 'whsec_shutdown_test_0123456789';

/**
 * The dev path (no DATABASE_URL): SIGTERM must let a request in flight finish
 * and be stored before the embedded PostgreSQL stops. The embedded-postgres
 * package's own signal handler used to stop the server and exit at once.
 */
describe('SIGTERM with the embedded PostgreSQL', () => {
  it('answers the request in flight, then stops the server and exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wi-shutdown-'));
    const endpointsFile = join(dir, 'endpoints.json');
    writeFileSync(
      endpointsFile,
      JSON.stringify({
        endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }],
      }),
    );
    const port = await freePort();
    // No DATABASE_URL, whichever database the rest of the suite uses.
    const child: ChildProcess = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: join(__dirname, '..', '..'),
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'test',
        PORT: String(port),
        DATA_DIR: dir,
        WEBHOOK_ENDPOINTS_FILE: endpointsFile,
        ROLES: 'api',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    const exited = new Promise<string>((resolve) => child.once('close', (code, signal) => resolve(signal ?? `code ${code}`)));
    try {
      await waitFor(
        'the service to answer',
        async () => (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.ok === true,
        120_000,
      );

      const { headers, body } = signStripe(stripeEvent({ id: 'evt_in_flight' }), SECRET);
      const socket = connect(port, '127.0.0.1');
      let response = '';
      socket.on('data', (c) => (response += c));
      const head = Object.entries({
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        host: 'x',
      })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      // Half the body, then SIGTERM, then the rest: the request is in flight when the signal arrives.
      socket.write(`POST /webhooks/stripe-acme HTTP/1.1\r\n${head}\r\n${body.slice(0, 20)}`);
      await new Promise((r) => setTimeout(r, 200));
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 500));
      socket.write(body.slice(20));
      await waitFor('the answer', async () => response.includes('\r\n\r\n') && response.includes('}'), 20_000);
      socket.end();

      expect(response).toMatch(/^HTTP\/1\.1 200/);
      expect(response).toContain('"accepted"');
      // Nest re-raises the signal once the app is closed.
      expect(await exited).toBe('SIGTERM');
      expect(out).toContain('embedded PostgreSQL stopped');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
