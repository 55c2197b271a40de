import { execFileSync } from 'node:child_process';
import { createPrivateKey, KeyObject, sign } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A sender's certificate host (AWS SNS, PayPal) on this machine: HTTPS with a
 * self-signed certificate for `hostName` ("localhost" unless a test resolves another
 * name here), serving that same certificate at any `*.pem` path, so its private key
 * signs the test's messages. `caFile` is what the endpoint trusts; `fetches` counts
 * what was served (the cache's proof).
 */
export interface FakeCertificateHost {
  /** https://<hostName>:<port> */
  url: string;
  caFile: string;
  certificatePem: string;
  privateKey: KeyObject;
  fetches: number;
  close(): Promise<void>;
}

export async function startFakeCertificateHost(hostName = 'localhost'): Promise<FakeCertificateHost> {
  const dir = mkdtempSync(join(tmpdir(), 'wi-cert-'));
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
      `/CN=${hostName}`,
      '-addext',
      `subjectAltName=DNS:${hostName}`,
    ],
    { stdio: 'ignore' },
  );
  const certificatePem = readFileSync(certFile, 'utf8');
  const keyPem = readFileSync(keyFile, 'utf8');
  const host: FakeCertificateHost = {
    url: '',
    caFile: certFile,
    certificatePem,
    privateKey: createPrivateKey(keyPem),
    fetches: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer({ key: keyPem, cert: certificatePem }, (req, res) => {
    if (!req.url?.split('?')[0].endsWith('.pem') && !req.url?.includes('/certs/')) {
      res.writeHead(404).end();
      return;
    }
    host.fetches += 1;
    res.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(certificatePem);
  });
  await new Promise<void>((resolve) => server.listen(0, resolve));
  host.url = `https://${hostName}:${(server.address() as AddressInfo).port}`;
  return host;
}

/** The fields AWS SNS signs, as name and value lines (SignatureVersion 1: SHA-1, 2: SHA-256). */
const SNS_SIGNED = ['Message', 'MessageId', 'Subject', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];

/** `message` with the Signature SNS would give it, signed with `privateKey`. */
export function signSnsMessage(message: Record<string, string>, privateKey: KeyObject): Record<string, string> {
  const lines = SNS_SIGNED.filter((k) => k in message)
    .map((k) => `${k}\n${message[k]}\n`)
    .join('');
  const hash = message.SignatureVersion === '1' ? 'sha1' : 'sha256';
  return { ...message, Signature: sign(hash, Buffer.from(lines), privateKey).toString('base64') };
}
