import dns from 'node:dns';
import request from 'supertest';
import { FakeCertificateHost, signSnsMessage, startFakeCertificateHost } from '../support/fake-certificate-host';
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
  let attacker: FakeCertificateHost;
  const originalLookup = dns.lookup;

  beforeAll(async () => {
    attacker = await startFakeCertificateHost(ATTACKER_HOST);
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
                caFile: attacker.caFile,
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
    await attacker?.close();
  });

  it('a certificate on the attacker host sns.us-east-1.amazonaws.com.attacker.test is refused as untrusted_certificate_url', async () => {
    const message = signSnsMessage(
      {
        Type: 'Notification',
        MessageId: 'forged-1',
        TopicArn: 'arn:aws:sns:us-east-1:123456789012:orders',
        Message: '{"order":"free"}',
        Timestamp: new Date().toISOString(),
        SignatureVersion: '2',
        SigningCertURL: `${attacker.url}/SimpleNotificationService-1.pem`,
      },
      attacker.privateKey,
    );
    const res = await request(t.url).post('/webhooks/sns-orders').set('content-type', 'text/plain').send(JSON.stringify(message));
    expect([res.status, res.body.reason]).toEqual([401, 'untrusted_certificate_url']);
    expect(await db.query('SELECT event_id FROM webhook_inbox')).toEqual([]);
  });
});
