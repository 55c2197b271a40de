import { createHmac } from 'node:crypto';
import { EndpointConfig } from '../../config/app-config';
import { HmacProvider } from './hmac.provider';

function endpoint(settings: Record<string, unknown>, overrides: Partial<EndpointConfig> = {}): EndpointConfig {
  return {
    id: 'e',
    provider: 'hmac',
    tenantId: 't',
    secrets: [{ label: 'a', value: 'secret-a' }],
    toleranceSeconds: 300,
    maxBodyBytes: 1024,
    settings,
    ...overrides,
  };
}

const base = { signature: { header: 'x-sig' }, eventId: { pointer: '/id' }, eventType: { pointer: '/type' } };

describe('HmacProvider.configure: one line per mistake', () => {
  it('accepts a minimal body-only scheme', () => {
    expect(new HmacProvider().configure(endpoint(base))).toEqual([]);
  });

  it('lists every mistake of a file, each on its own line', () => {
    const problems = new HmacProvider().configure(
      endpoint(
        {
          algorithm: 'md5',
          signature: { header: 'x sig', encoding: 'base32' },
          signed: { template: '{timestamp}.{bodyy}' },
          eventId: { header: 'x-id' },
          eventType: { pointer: 'type' },
        },
        {},
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^settings\.algorithm: /),
      expect.stringMatching(/^settings\.signature\.header: a header name/),
      expect.stringMatching(/^settings\.signature\.encoding: /),
      expect.stringMatching(/^settings\.eventType\.pointer: a JSON pointer/),
    ]);
  });

  it('refuses what would make a signature prove nothing, naming the fix', () => {
    const provider = new HmacProvider();
    expect(provider.configure(endpoint({ ...base, signed: { template: '{timestamp}.{bodyy}' } }))).toEqual([
      'settings.signed.template: unknown placeholder {bodyy} (known: {timestamp}, {id}, {body})',
      'settings.signed.template: must contain {body} exactly once',
      'settings.signed.template: uses {timestamp} but settings.timestamp is not set',
    ]);
    expect(provider.configure(endpoint({ ...base, timestamp: { header: 'x-ts' } }))).toEqual([
      'settings.timestamp: a timestamp outside the body must be in settings.signed.template as {timestamp}, or it proves nothing',
    ]);
    expect(provider.configure(endpoint({ ...base, eventId: { header: 'x-id' }, eventType: { header: 'x-type' } }))).toEqual([
      'settings.eventId: header "x-id" is not signed; say "unsigned": true to use it anyway (a captured body could then be replayed under a new id)',
      'settings.eventType: header "x-type" is not signed; say "unsigned": true to use it anyway',
    ]);
    expect(provider.configure(endpoint({ ...base, signed: { template: '{id}.{body}' } }))).toEqual([
      'settings.signed.template: uses {id} but settings.eventId is not a header',
    ]);
    expect(provider.configure(endpoint(base, { expect: { team: 'T1' } }))).toEqual([
      'expect.team: for provider hmac, expect keys are JSON pointers into the body (e.g. "/team_id")',
    ]);
    expect(provider.configure(endpoint({ ...base, secret: { encoding: 'base64', prefix: 'whsec_' } }))).toEqual([
      'secrets "a": not base64 after the prefix "whsec_"',
    ]);
  });
});

describe('HmacProvider.verify: algorithms and encodings', () => {
  const body = Buffer.from('{"id":"e1","type":"t"}');
  it.each([
    ['sha1', 'hex'],
    ['sha256', 'base64'],
    ['sha512', 'hex'],
  ] as const)('%s / %s', (algorithm, encoding) => {
    const provider = new HmacProvider();
    const config = endpoint({ ...base, algorithm, signature: { header: 'X-Sig', encoding, prefix: `${algorithm}=` } });
    expect(provider.configure(config)).toEqual([]);
    const signature = `${algorithm}=${createHmac(algorithm, 'secret-a').update(body).digest(encoding)}`;
    expect(provider.verify({ headers: { 'x-sig': signature }, rawBody: body }, config, new Date())).toMatchObject({
      eventId: 'e1',
      eventType: 't',
      verifiedWith: 'a',
    });
    expect(() => provider.verify({ headers: { 'x-sig': signature.replace(/.$/, 'A') }, rawBody: body }, config, new Date())).toThrow();
  });

  it('an ISO 8601 timestamp header signed before the body (Zendesk-style concatenation)', () => {
    const provider = new HmacProvider();
    const config = endpoint({
      ...base,
      signature: { header: 'x-sig', encoding: 'base64' },
      signed: { template: '{timestamp}{body}' },
      timestamp: { header: 'x-ts', format: 'iso8601' },
    });
    expect(provider.configure(config)).toEqual([]);
    const ts = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const sig = createHmac('sha256', 'secret-a').update(ts).update(body).digest('base64');
    expect(provider.verify({ headers: { 'x-sig': sig, 'x-ts': ts }, rawBody: body }, config, new Date())).toMatchObject({ eventId: 'e1' });
    expect(() => provider.verify({ headers: { 'x-sig': sig, 'x-ts': ts }, rawBody: body }, config, new Date(Date.now() + 301_000))).toThrow(
      expect.objectContaining({ reason: 'timestamp_out_of_tolerance' }),
    );
  });
});
