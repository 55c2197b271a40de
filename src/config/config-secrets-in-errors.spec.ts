import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './config.error';
import { Env, loadConfig } from './load-config';

/**
 * Contract: a bad configuration is refused at start with one clear line per mistake and never a
 * secret in the message. load-config already guards one swapped-field case (ADMIN_TOKENS
 * "name:token:role", test in load-config.spec.ts) and a secret pasted into an `*_ENV` name; these
 * are the neighbouring mistakes it does not guard.
 */
function endpointsFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'wi-review-')), 'endpoints.json');
  writeFileSync(
    file,
    JSON.stringify({ endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', env: 'S' }] }] }),
  );
  return file;
}

function errorOf(env: Env): string {
  try {
    loadConfig({ WEBHOOK_ENDPOINTS_FILE: endpointsFile(), S: 'whsec_0123456789abcdef0123', ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('config errors never print a secret', () => {
  it('ADMIN_TOKENS with the fields reversed ("token:role:name")', () => {
    const token = 'Sup3rS3cretOperatorToken-0123456789';
    const message = errorOf({ ADMIN_TOKENS: `${token}:operator:alice` });
    expect(message).not.toContain(token);
  });

  it('PAYLOAD_KEYS_FILE given the keys themselves instead of a path', () => {
    const material = 'q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJABC=';
    const message = errorOf({ PAYLOAD_KEYS_FILE: `k1:${material}` });
    expect(message).not.toContain(material);
  });

  it('a destination TLS key file variable given the PEM itself instead of a path', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----';
    const message = errorOf({ DESTINATION_ERP_TLS_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt', DESTINATION_ERP_TLS_KEY_FILE: pem });
    expect(message).not.toContain('MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj');
    // and one line per mistake
    expect(message.split('\n')).toHaveLength(1);
  });
});
