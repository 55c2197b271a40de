import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { signGithub, signStripe, stripeEvent } from '../support/signers';
import { TestDatabase, useTestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { waitFor } from '../support/wait-for';

const STRIPE_SECRET = 'whsec_leaktest_stripe_0123456789';
const GITHUB_SECRET = 'gh_leaktest_secret_0123456789';
const METRICS_TOKEN = 'metrics-leaktest-token-0123456789';
const PAYLOAD_MARKER = 'payload-marker-4242-do-not-log';

const endpoints = [
  { id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: STRIPE_SECRET }] },
  { id: 'gh-acme', provider: 'github', tenantId: 'acme', secrets: [{ label: 'current', value: GITHUB_SECRET }] },
];

/** Accepted, duplicate, rejected (bad signature, stale, unknown endpoint) and admin calls: everything that logs. */
async function fullRun(url: string, auth: { operator: string; viewer: string }, db: TestDatabase): Promise<string[]> {
  const signatures: string[] = [];
  const stripe = signStripe(
    stripeEvent({ id: 'evt_leak_1', data: { object: { id: 'pi_1', receipt_email: PAYLOAD_MARKER } } }),
    STRIPE_SECRET,
  );
  signatures.push(...signatureValues(stripe.headers));
  expect((await request(url).post('/webhooks/stripe-acme').set(stripe.headers).send(stripe.body)).status).toBe(200);
  expect((await request(url).post('/webhooks/stripe-acme').set(stripe.headers).send(stripe.body)).status).toBe(200);
  const forged = signStripe(stripeEvent({ id: 'evt_leak_2', note: PAYLOAD_MARKER }), 'whsec_wrong_secret_000000');
  signatures.push(...signatureValues(forged.headers));
  expect((await request(url).post('/webhooks/stripe-acme').set(forged.headers).send(forged.body)).status).toBe(401);
  const stale = signStripe(stripeEvent({ id: 'evt_leak_3' }), STRIPE_SECRET, Math.floor(Date.now() / 1000) - 3600);
  expect((await request(url).post('/webhooks/stripe-acme').set(stale.headers).send(stale.body)).status).toBe(401);
  const gh = signGithub({ marker: PAYLOAD_MARKER, hook: { id: 1 } }, GITHUB_SECRET, 'delivery-leak-1');
  signatures.push(...signatureValues(gh.headers));
  await request(url).post('/webhooks/gh-acme').set(gh.headers).send(gh.body);
  const badGh = signGithub({ marker: PAYLOAD_MARKER }, 'not-the-secret-000000', 'delivery-leak-2');
  expect((await request(url).post('/webhooks/gh-acme').set(badGh.headers).send(badGh.body)).status).toBe(401);
  expect((await request(url).post('/webhooks/nope').set(stripe.headers).send(stripe.body)).status).toBe(404);

  const op = { Authorization: `Bearer ${auth.operator}` };
  const [{ id }] = await db.query<{ id: string }>(`SELECT id::text FROM webhook_inbox WHERE event_id = 'evt_leak_1'`);
  await db.query(`UPDATE webhook_inbox SET status = 'quarantined' WHERE id = $1`, [id]);
  expect((await request(url).get(`/admin/inbox/${id}`).set(op)).status).toBe(200);
  expect((await request(url).post(`/admin/inbox/${id}/replay`).set(op).send({ reason: 'leak test' })).status).toBe(200);
  expect(
    (
      await request(url)
        .post(`/admin/inbox/${id}/replay`)
        .set({ Authorization: `Bearer ${auth.viewer}` })
        .send({ reason: 'x' })
    ).status,
  ).toBe(403);
  expect(
    (
      await request(url)
        .get('/admin/inbox')
        .set({ Authorization: `Bearer ${auth.operator}x` })
    ).status,
  ).toBe(401);
  expect((await request(url).get('/admin/inbox?cursor=bad!').set(op)).status).toBe(400);
  expect(
    (
      await request(url)
        .get('/metrics')
        .set({ Authorization: `Bearer ${METRICS_TOKEN}` })
    ).status,
  ).toBe(200);
  expect((await request(url).get('/metrics').set({ Authorization: 'Bearer wrong-metrics-token' })).status).toBe(401);
  expect(signatures.length).toBe(3);
  return signatures;
}

function expectNoLeaks(text: string, extra: string[]): void {
  const secrets = [STRIPE_SECRET, GITHUB_SECRET, METRICS_TOKEN, OPERATOR_TOKEN, VIEWER_TOKEN, PAYLOAD_MARKER, ...extra];
  for (const secret of secrets) expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false });
  // The hex part of every signature, in case a header is logged in another shape.
  for (const s of extra) for (const hex of s.match(/[0-9a-f]{64}/g) ?? []) expect(text.includes(hex)).toBe(false);
}

describe('logs never carry secrets, tokens, signatures or payloads', () => {
  let db: TestDatabase;
  useTestDatabase((created) => (db = created));

  it('in-process run (CapturingLogger at debug level)', async () => {
    const t: TestApp = await startTestApp({ databaseUrl: db.url, endpoints, env: { METRICS_TOKEN, LOG_LEVEL: 'debug' } });
    let signatures: string[];
    try {
      signatures = await fullRun(t.url, { operator: OPERATOR_TOKEN, viewer: VIEWER_TOKEN }, db);
    } finally {
      await t.close();
    }
    expect(t.logs.lines.length).toBeGreaterThan(0);
    expectNoLeaks(t.logs.text(), signatures);
  });

  it('production path: pino JSON lines from src/main.ts, one short line per request', async () => {
    await db.query('TRUNCATE webhook_inbox, admin_audit');
    const dir = mkdtempSync(join(tmpdir(), 'wi-leak-'));
    const endpointsFile = join(dir, 'endpoints.json');
    writeFileSync(endpointsFile, JSON.stringify({ endpoints }));
    const port = await freePort();
    const child: ChildProcess = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: join(__dirname, '..', '..'),
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'test',
        PORT: String(port),
        DATABASE_URL: db.url,
        WEBHOOK_ENDPOINTS_FILE: endpointsFile,
        ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN}`,
        METRICS_TOKEN,
        ROLES: 'api',
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    try {
      await waitFor(
        'the service to answer',
        async () => (await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => undefined))?.ok === true,
        60_000,
      );
      const signatures = await fullRun(`http://127.0.0.1:${port}`, { operator: OPERATOR_TOKEN, viewer: VIEWER_TOKEN }, db);
      await waitFor('the /metrics log line', async () => out.includes('"path":"/metrics"'), 5_000);
      expectNoLeaks(out, signatures);
      const lines = out.split('\n').filter((l) => l.startsWith('{'));
      const parsed = lines.map((l) => JSON.parse(l));
      // Admin requests get one short pino-http line; the webhook route logs each outcome itself, with its ids.
      const adminLine = parsed.find((l) => l.req?.path?.startsWith('/admin/') && l.res?.statusCode === 200);
      expect(adminLine).toMatchObject({ msg: 'request completed', req: { method: expect.any(String) } });
      expect(Object.keys(adminLine.req).sort()).toEqual(['id', 'method', 'path']);
      expect(typeof adminLine.responseTime).toBe('number');
      expect(parsed.some((l) => l.req?.path?.startsWith('/webhooks/'))).toBe(false);
      const rejected = parsed.find((l) => l.msg === 'webhook rejected');
      expect(rejected).toMatchObject({ endpointId: 'stripe-acme', reason: expect.any(String) });
      expect(parsed.some((l) => l.msg?.includes?.('listening on port'))).toBe(true);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }, 90_000);
});

function signatureValues(headers: Record<string, string>): string[] {
  return Object.entries(headers)
    .filter(([name]) => /signature|hmac/i.test(name))
    .map(([, value]) => value);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
