import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { insertErpRow, outboxRow } from './outbox-rows';

const ERP_TOKEN = 'erp-bearer-token-never-logged-0123';
const SIGNING_SECRET = `whsec_${Buffer.from('outbound-signing-key-for-the-erp').toString('base64')}`;

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made by openssl for this run. */
function certificates(): Record<'ca' | 'serverKey' | 'serverCert' | 'clientKey' | 'clientCert', string> {
  const dir = mkdtempSync(join(tmpdir(), 'wi-mtls-'));
  const f = (name: string) => join(dir, name);
  const run = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...key, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=test-ca');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const [name, subject, ext] of [
    ['server', '/CN=127.0.0.1', ['-extfile', f('server.ext')]],
    ['client', '/CN=webhook-inbox', []],
  ] as const) {
    run('req', ...key, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', subject);
    run(
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.crt`),
      '-days',
      '1',
      ...ext,
    );
  }
  return {
    ca: f('ca.crt'),
    serverKey: f('server.key'),
    serverCert: f('server.crt'),
    clientKey: f('client.key'),
    clientCert: f('client.crt'),
  };
}

describe('outbound credentials: bearer from a named variable, Standard Webhooks signing, client certificate', () => {
  let db: TestDatabase;
  let email: FakeDestination & { sendUrl: string };
  const apps: TestApp[] = [];

  const start = async (env: Record<string, string>) => {
    const t = await startTestApp({
      databaseUrl: db.url,
      env: { EMAIL_URL: email.sendUrl, RELAY_TIMEOUT_MS: '2000', RELAY_LEASE_MS: '10000', ...env },
    });
    apps.push(t);
    return t;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    email = await startFakeEmail();
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
    await email.close();
    await db.drop();
  });
  beforeEach(() => db.query('DELETE FROM outbox'));

  it('the ERP fake refuses a relay without the configured bearer token, and takes it with the token and a valid signature', async () => {
    const erp = await startFakeErp({ bearer: ERP_TOKEN, signingSecret: SIGNING_SECRET });
    try {
      const unauthenticated = await start({ ERP_URL: erp.url });
      const refusedKey = await insertErpRow(db, 'o-refused');
      await unauthenticated.app.get(OutboxRelay).runOnce();
      expect(await outboxRow(db, refusedKey)).toMatchObject({ status: 'dead', last_status_code: 401 });
      expect(erp.refused).toBe(1);
      expect(erp.effects.size).toBe(0);

      // The token alone is not enough for this ERP: it also verifies our signature.
      const unsigned = await start({ ERP_URL: erp.url, ERP_BEARER_ENV: 'ERP_TOKEN', ERP_TOKEN });
      const unsignedKey = await insertErpRow(db, 'o-unsigned');
      await unsigned.app.get(OutboxRelay).runOnce();
      expect(await outboxRow(db, unsignedKey)).toMatchObject({ status: 'dead', last_status_code: 401 });
      expect(erp.refused).toBe(2);

      const signed = await start({
        DESTINATION_ERP_URL: erp.url,
        DESTINATION_ERP_BEARER_ENV: 'ERP_TOKEN',
        DESTINATION_ERP_SIGNING_SECRET_ENV: 'ERP_SIGNING_SECRET',
        ERP_TOKEN,
        ERP_SIGNING_SECRET: SIGNING_SECRET,
      });
      const key = await insertErpRow(db, 'o-signed');
      await signed.app.get(OutboxRelay).runOnce();
      expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
      const [request] = erp.posts(key);
      expect(request.headers).toMatchObject({ authorization: `Bearer ${ERP_TOKEN}`, 'idempotency-key': key, 'webhook-id': key });
      // Verified again here by the reference library, against the exact bytes the ERP received.
      expect(() => new Webhook(SIGNING_SECRET).verify(request.body, request.headers as Record<string, string>)).not.toThrow();
      expect(erp.effects.has(key)).toBe(true);

      for (const t of [unauthenticated, unsigned, signed]) {
        expect(t.logs.text()).not.toContain(ERP_TOKEN);
        expect(t.logs.text()).not.toContain(SIGNING_SECRET.slice('whsec_'.length));
        expect(t.logs.text()).not.toContain(request.headers['webhook-signature'] as string);
      }
    } finally {
      await erp.close();
    }
  });

  it('with a client certificate the relay reaches an ERP that requires one (mTLS); without it the handshake is refused and nothing is applied', async () => {
    const c = certificates();
    const erp = await new FakeDestination('/operations', '/operations/').start({
      key: readFileSync(c.serverKey),
      cert: readFileSync(c.serverCert),
      ca: readFileSync(c.ca),
      requestCert: true,
      rejectUnauthorized: true,
    });
    try {
      const without = await start({ ERP_URL: erp.url, ERP_TLS_CA_FILE: c.ca });
      const refusedKey = await insertErpRow(db, 'o-no-cert');
      await without.app.get(OutboxRelay).runOnce();
      expect(await outboxRow(db, refusedKey)).toMatchObject({ status: 'pending', delivered_at: null });
      expect(erp.requests).toHaveLength(0);
      await db.query('DELETE FROM outbox');

      const withCert = await start({
        ERP_URL: erp.url,
        ERP_TLS_CA_FILE: c.ca,
        ERP_TLS_CERT_FILE: c.clientCert,
        ERP_TLS_KEY_FILE: c.clientKey,
      });
      const key = await insertErpRow(db, 'o-cert');
      await withCert.app.get(OutboxRelay).runOnce();
      expect(await outboxRow(db, key)).toMatchObject({ status: 'delivered' });
      expect(erp.effects.has(key)).toBe(true);
      expect(withCert.logs.text()).not.toContain(readFileSync(c.clientKey, 'utf8').split('\n')[1]);
    } finally {
      await erp.close();
    }
  });
});
