import { execFileSync } from 'node:child_process';
import { createPrivateKey, sign } from 'node:crypto';
import dns from 'node:dns';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * `key.certificate.hosts` must match the certificate URL's host name in full. Written the
 * natural way, without anchors (`sns\.us-east-1\.amazonaws\.com`), a substring match let a
 * host of the attacker's, `sns.us-east-1.amazonaws.com.attacker.test` (a publicly trusted
 * certificate, simulated by caFile; its DNS, by a lookup override), serve the signing
 * certificate: any SNS message it signed was accepted.
 */
const ATTACKER_HOST = 'sns.us-east-1.amazonaws.com.attacker.test';

describe('provider "sender": certificate host patterns match the whole host name', () => {
  let db: TestDatabase;
  let t: TestApp;
  let server: Server;
  let port: number;
  let privateKeyPem: string;
  const originalLookup = dns.lookup;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wi-cert-host-'));
    const keyFile = join(dir, 'key.pem');
    const certFile = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-days',
        '2',
        '-subj',
        `/CN=${ATTACKER_HOST}`,
        '-addext',
        `subjectAltName=DNS:${ATTACKER_HOST}`,
      ],
      { stdio: 'ignore' },
    );
    const certPem = readFileSync(certFile, 'utf8');
    privateKeyPem = readFileSync(keyFile, 'utf8');
    server = createServer({ key: privateKeyPem, cert: certPem }, (_req, res) => res.writeHead(200).end(certPem));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    // The attacker's DNS: their domain resolves to their server.
    (dns as { lookup: unknown }).lookup = ((host: string, options: unknown, cb?: unknown) => {
      const callback = (typeof options === 'function' ? options : cb) as (...a: unknown[]) => void;
      const opts = (typeof options === 'object' && options) || {};
      if (host === ATTACKER_HOST)
        return (opts as { all?: boolean }).all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
      return (originalLookup as (...a: unknown[]) => void)(host, options, cb);
    }) as typeof dns.lookup;
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        {
          id: 'sns-orders',
          provider: 'sender',
          tenantId: 'acme',
          secrets: [],
          settings: {
            preset: 'aws-sns',
            key: {
              type: 'rsa',
              hashBy: { pointer: '/SignatureVersion', values: { '2': 'sha256' } },
              // The natural way to write "this host", without anchors.
              certificate: {
                url: { pointer: '/SigningCertURL' },
                hosts: ['sns\\.us-east-1\\.amazonaws\\.com'],
                path: '\\.pem$',
                caFile: certFile,
              },
            },
          },
        },
      ],
    });
  });
  afterAll(async () => {
    dns.lookup = originalLookup;
    await t?.close();
    await db?.drop();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('a certificate on the attacker host sns.us-east-1.amazonaws.com.attacker.test is refused as untrusted_certificate_url', async () => {
    const message: Record<string, string> = {
      Type: 'Notification',
      MessageId: 'forged-1',
      TopicArn: 'arn:aws:sns:us-east-1:123456789012:orders',
      Message: '{"order":"free"}',
      Timestamp: new Date().toISOString(),
      SignatureVersion: '2',
      SigningCertURL: `https://${ATTACKER_HOST}:${port}/SimpleNotificationService-1.pem`,
    };
    const lines = ['Message', 'MessageId', 'Subject', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type']
      .filter((k) => k in message)
      .map((k) => `${k}\n${message[k]}\n`)
      .join('');
    message.Signature = sign('sha256', Buffer.from(lines), createPrivateKey(privateKeyPem)).toString('base64');
    const res = await request(t.url).post('/webhooks/sns-orders').set('content-type', 'text/plain').send(JSON.stringify(message));
    expect([res.status, res.body.reason]).toEqual([401, 'untrusted_certificate_url']);
    expect(await db.query('SELECT event_id FROM webhook_inbox')).toEqual([]);
  });
});
