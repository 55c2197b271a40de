import { createHash, KeyObject, X509Certificate } from 'node:crypto';
import { Agent, get } from 'node:https';
import { rootCertificates } from 'node:tls';
import { ServiceUnavailableError, UnauthorizedError } from '../../common/errors';

/** Where a sender's signing certificates may come from: HTTPS, these host names, this path. */
export interface CertificateSource {
  /** Host name patterns, each anchored to match the whole name. */
  hosts: readonly RegExp[];
  path?: RegExp;
  /** Extra PEM trust anchors, added to the system's. */
  ca?: string;
}

const MAX_CERTIFICATE_BYTES = 16 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
const KEEP_MS = 60 * 60 * 1000;
const MAX_ENTRIES = 100;

interface Entry {
  key: KeyObject;
  until: number;
}

/**
 * Signing certificates named by the request itself (AWS SNS `SigningCertURL`,
 * PayPal `PAYPAL-CERT-URL`): fetched only over HTTPS from an allowed host (TLS
 * authenticates it), at most 16 KiB, within its validity, kept an hour. One fetch
 * per URL at a time; the number kept is bounded, so a flood of distinct URLs on an
 * allowed host costs fetches, never memory. Errors name the rule, never the URL.
 */
export class CertificateCache {
  private readonly kept = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<KeyObject>>();

  async publicKey(url: string, source: CertificateSource, now: Date): Promise<KeyObject> {
    requireAllowed(url, source);
    // Kept per URL and trust: a certificate fetched under one endpoint's extra anchors is not another's.
    const cacheKey = source.ca ? `${createHash('sha256').update(source.ca).digest('hex')} ${url}` : url;
    const entry = this.kept.get(cacheKey);
    if (entry && entry.until > now.getTime()) return entry.key;
    let pending = this.inFlight.get(cacheKey);
    if (!pending) {
      pending = this.fetchKey(url, cacheKey, source, now).finally(() => this.inFlight.delete(cacheKey));
      this.inFlight.set(cacheKey, pending);
    }
    return pending;
  }

  private async fetchKey(url: string, cacheKey: string, source: CertificateSource, now: Date): Promise<KeyObject> {
    const pem = await fetchText(url, source.ca);
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(pem);
    } catch {
      throw new UnauthorizedError('invalid_certificate', 'the signing certificate is not an X.509 certificate');
    }
    const validTo = Date.parse(certificate.validTo);
    if (Date.parse(certificate.validFrom) > now.getTime() || validTo < now.getTime()) {
      throw new UnauthorizedError('invalid_certificate', 'the signing certificate is outside its validity');
    }
    if (this.kept.size >= MAX_ENTRIES) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(cacheKey, { key: certificate.publicKey, until: Math.min(now.getTime() + KEEP_MS, validTo) });
    return certificate.publicKey;
  }
}

function requireAllowed(url: string, source: CertificateSource): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnauthorizedError('untrusted_certificate_url', 'the signing certificate URL is malformed');
  }
  const allowed =
    parsed.protocol === 'https:' &&
    !parsed.username &&
    !parsed.password &&
    source.hosts.some((host) => host.test(parsed.hostname)) &&
    (!source.path || source.path.test(parsed.pathname));
  if (!allowed) throw new UnauthorizedError('untrusted_certificate_url', 'the signing certificate URL is not on an allowed HTTPS host');
}

/** The body of a 200 answer, bounded; a sender's host that does not answer is a 503 (the sender retries). */
function fetchText(url: string, ca?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const unavailable = () => reject(new ServiceUnavailableError('certificate_unavailable', 30));
    // An agent of its own: the global agent's options would override the trust given here.
    const agent = new Agent({ keepAlive: false, ca: ca ? [...rootCertificates, ca] : undefined });
    const req = get(url, { timeout: FETCH_TIMEOUT_MS, agent }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return unavailable();
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_CERTIFICATE_BYTES) {
          req.destroy();
          reject(new UnauthorizedError('invalid_certificate', 'the signing certificate is too large'));
        } else chunks.push(chunk);
      });
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', unavailable);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', unavailable);
  });
}
