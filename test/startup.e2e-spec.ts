import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, TestDatabase } from './support/test-database';
import { startTestApp } from './support/test-app';

/** Runs src/main.ts as `npm start` would (transpiled on the fly) with the given environment. */
function runMain(env: Record<string, string>) {
  return spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: join(__dirname, '..'),
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('start-up', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('stops with one clear line naming the bad variable and a non-zero exit', () => {
    const result = runMain({ PORT: 'eighty' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual(['PORT: expected an integer between 0 and 65535, got "eighty"']);
  });

  it('refuses a secret equal to its prefix (an empty HMAC key) with one line naming the endpoint and the rule, never the secret', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'wi-start-')), 'endpoints.json');
    const settings = {
      secret: { prefix: 'whsec_' },
      signature: { header: 'x-sig' },
      eventId: { pointer: '/id' },
      eventType: { pointer: '/type' },
    };
    writeFileSync(
      file,
      JSON.stringify({
        endpoints: [{ id: 'h', provider: 'hmac', tenantId: 't', secrets: [{ label: 'current', value: 'whsec_' }], settings }],
      }),
    );
    const result = runMain({ DATABASE_URL: db.url, WEBHOOK_ENDPOINTS_FILE: file, NODE_ENV: 'development', LOG_LEVEL: 'error' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      'WEBHOOK_ENDPOINTS_FILE: endpoint "h": secrets "current": the text after "whsec_" must be at least 16 bytes',
    ]);
  });

  it('refuses an endpoints file that names an unknown provider', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'wi-start-')), 'endpoints.json');
    writeFileSync(
      file,
      JSON.stringify({ endpoints: [{ id: 'x', provider: 'paypal', tenantId: 't', secrets: [{ label: 'a', value: 'b' }] }] }),
    );
    await expect(startTestApp({ databaseUrl: db.url, env: { WEBHOOK_ENDPOINTS_FILE: file } })).rejects.toThrow(
      /endpoint "x": unknown provider "paypal"/,
    );
  });

  it('refuses an expect key the provider does not report, or of the wrong type', async () => {
    for (const [expectation, message] of [
      [{ acount: 'acct_1' }, /expect\.acount is not known to stripe \(known: account, livemode\)/],
      [{ livemode: 'true' }, /expect\.livemode must be a boolean/],
    ] as const) {
      const file = join(mkdtempSync(join(tmpdir(), 'wi-start-')), 'endpoints.json');
      writeFileSync(
        file,
        JSON.stringify({
          endpoints: [{ id: 's', provider: 'stripe', tenantId: 't', secrets: [{ label: 'a', value: 'b' }], expect: expectation }],
        }),
      );
      await expect(startTestApp({ databaseUrl: db.url, env: { WEBHOOK_ENDPOINTS_FILE: file } })).rejects.toThrow(message);
    }
  });

  it('refuses a provider "hmac" scheme with one line per mistake, across endpoints', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'wi-start-')), 'endpoints.json');
    const secrets = [{ label: 'a', value: 'b' }];
    writeFileSync(
      file,
      JSON.stringify({
        endpoints: [
          {
            id: 'h1',
            provider: 'hmac',
            tenantId: 't',
            secrets,
            settings: { signature: { header: 'x-sig' }, eventId: { header: 'x-id' }, eventType: { pointer: '/type' } },
          },
          {
            id: 'h2',
            provider: 'hmac',
            tenantId: 't',
            secrets,
            settings: { signature: { header: 'x-sig', encoding: 'base32' }, eventId: { pointer: '/id' }, eventType: { pointer: '/type' } },
          },
          { id: 's', provider: 'stripe', tenantId: 't', secrets, settings: { any: 1 } },
        ],
      }),
    );
    const failure = await startTestApp({ databaseUrl: db.url, env: { WEBHOOK_ENDPOINTS_FILE: file } }).catch((error: Error) => error);
    expect((failure as Error).message.split('\n')).toEqual([
      expect.stringMatching(/^WEBHOOK_ENDPOINTS_FILE: endpoint "h1": settings\.eventId: header "x-id" is not signed; say "unsigned": true/),
      expect.stringMatching(/^WEBHOOK_ENDPOINTS_FILE: endpoint "h2": settings\.signature\.encoding: /),
      'WEBHOOK_ENDPOINTS_FILE: endpoint "s": settings: provider "stripe" takes no settings',
    ]);
  });

  it('refuses an endpoint without secrets unless its key comes from a sender certificate, and a sender scheme with one line per mistake', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'wi-start-')), 'endpoints.json');
    writeFileSync(
      file,
      JSON.stringify({
        endpoints: [
          { id: 's', provider: 'stripe', tenantId: 't', secrets: [] },
          { id: 'sns', provider: 'sender', tenantId: 't', secrets: [], settings: { preset: 'aws-sns' } },
          {
            id: 'tw',
            provider: 'sender',
            tenantId: 't',
            secrets: [{ label: 'a', value: 'twilio-auth-token-0123' }],
            settings: { preset: 'twilio' },
          },
          { id: 'z', provider: 'sender', tenantId: 't', secrets: [], settings: { preset: 'zoom' } },
        ],
      }),
    );
    const failure = await startTestApp({ databaseUrl: db.url, env: { WEBHOOK_ENDPOINTS_FILE: file } }).catch((error: Error) => error);
    expect((failure as Error).message.split('\n')).toEqual([
      'WEBHOOK_ENDPOINTS_FILE: endpoint "s": secrets: at least one is needed',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "tw": settings.publicUrl: the sender signs the URL: give it as configured at the sender',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "z": secrets: no signing key is listed',
    ]);
  });
});
