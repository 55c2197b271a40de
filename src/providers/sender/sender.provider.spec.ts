import { createHmac, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EndpointConfig } from '../../config/app-config';
import { presetsDirectory } from './sender-presets';
import { SenderProvider } from './sender.provider';

function endpoint(settings: Record<string, unknown>, overrides: Partial<EndpointConfig> = {}): EndpointConfig {
  return {
    id: 'e',
    provider: 'sender',
    tenantId: 't',
    secrets: [{ label: 'a', value: 'a-secret-of-sixteen-bytes' }],
    toleranceSeconds: 300,
    maxBodyBytes: 1024,
    settings,
    ...overrides,
  };
}

const base = { key: { type: 'hmac' }, signature: { header: 'x-sig' }, eventId: '{/id}', eventType: '{/type}' };
const ed25519Hex = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' }).subarray(-32).toString('hex');
const p256Base64 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');

/** What an endpoint must add to each preset: its keys and the values only it knows. */
const COMPLETION: Record<string, Partial<EndpointConfig>> = {
  twilio: { settings: { preset: 'twilio', publicUrl: 'https://hooks.example.com/t' } },
  square: { settings: { preset: 'square', publicUrl: 'https://hooks.example.com/s' } },
  'hubspot-v3': { settings: { preset: 'hubspot-v3', publicUrl: 'https://hooks.example.com/h' } },
  paypal: { secrets: [], settings: { preset: 'paypal', values: { webhookId: 'WH-1' } } },
  'aws-sns': { secrets: [], settings: { preset: 'aws-sns' } },
  sendgrid: { secrets: [{ label: 'a', value: p256Base64 }] },
  discord: { secrets: [{ label: 'a', value: ed25519Hex }] },
  adyen: { secrets: [{ label: 'a', value: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056' }] },
  meta: {
    secrets: [
      { label: 'a', value: 'a-secret-of-sixteen-bytes' },
      { label: 'verify-token', value: 'a-token-of-sixteen-bytes' },
    ],
  },
};

describe('SenderProvider.configure', () => {
  const presets = readdirSync(presetsDirectory()!).map((file) => file.replace(/\.json$/, ''));

  it('finds the shipped presets', () => {
    expect(presets).toEqual(
      expect.arrayContaining(['twilio', 'sendgrid', 'discord', 'zoom', 'mailgun', 'square', 'paypal', 'aws-sns', 'adyen', 'intercom']),
    );
    expect(presets).toEqual(expect.arrayContaining(['hubspot-v3', 'calendly', 'twitch', 'meta', 'microsoft-graph']));
  });

  it.each(readdirSync(presetsDirectory()!).map((f) => [f.replace(/\.json$/, '')]))('preset %s is valid once completed', (name) => {
    const completion = COMPLETION[name] ?? {};
    const provider = new SenderProvider();
    const e = endpoint({ preset: name }, completion);
    expect(provider.configure(e)).toEqual([]);
    expect(provider.keyless(e)).toBe(name === 'paypal' || name === 'aws-sns');
  });

  it('accepts a minimal scheme', () => {
    expect(new SenderProvider().configure(endpoint(base))).toEqual([]);
  });

  it('refuses what the sender did not sign, unless said knowingly', () => {
    const problems = new SenderProvider().configure(
      endpoint({
        ...base,
        signed: '{/signature/token}',
        eventId: '{header:x-id}',
        eventType: '{/type}',
      }),
    );
    expect(problems).toEqual([
      'settings.signed: covers some fields of the body, which is stored whole; say "unsignedBody": true to accept the fields nothing signs',
      'settings.eventId: header "x-id" is not signed; list it in settings.unsignedHeaders to use it anyway',
      'settings.eventType: /type is not signed; say "unsignedBody": true to read it anyway',
    ]);
    expect(
      new SenderProvider().configure(
        endpoint({ ...base, signed: '{/signature/token}', eventId: '{header:x-id}', unsignedHeaders: ['X-Id'], unsignedBody: true }),
      ),
    ).toEqual([]);
  });

  it('refuses a body nothing signs, and a digest of a body only partly signed, unless said knowingly', () => {
    const url = { ...base, signed: '{url}', publicUrl: 'https://hooks.example.com/e', eventType: 'event' };
    expect(new SenderProvider().configure(endpoint({ ...url, eventId: '{digest}' }))).toEqual([
      'settings.signed: covers no part of the body; say "unsignedBody": true to accept bodies nothing signs',
      'settings.eventId: {digest} reads the whole body, which is not signed; say "unsignedBody": true to read it anyway',
    ]);
    const fields = { ...base, signed: '{/a}', eventType: 'event' };
    expect(new SenderProvider().configure(endpoint({ ...fields, eventId: '{/a}:{digest}' }))).toEqual([
      'settings.signed: covers some fields of the body, which is stored whole; say "unsignedBody": true to accept the fields nothing signs',
      'settings.eventId: {digest} reads the whole body, which is not signed; say "unsignedBody": true to read it anyway',
    ]);
    expect(new SenderProvider().configure(endpoint({ ...fields, body: 'json-array', eventId: '{each:/a}' }))).toEqual([
      'settings.signed: covers some fields of the body, which is stored whole; say "unsignedBody": true to accept the fields nothing signs',
      'settings.eventId: {each:/a} reads the whole body, which is not signed; say "unsignedBody": true to read it anyway',
    ]);
    expect(new SenderProvider().configure(endpoint({ ...url, eventId: '{digest}', unsignedBody: true }))).toEqual([]);
    expect(new SenderProvider().configure(endpoint({ ...fields, eventId: '{/a}:{digest}', unsignedBody: true }))).toEqual([]);
  });

  it('refuses placeholders of handshake replies in ids and types: the query is never signed', () => {
    expect(new SenderProvider().configure(endpoint({ ...base, eventId: '{/id}-{query:delivery}', eventType: '{hmac-hex:/type}' }))).toEqual(
      [
        'settings.eventId: {query:delivery} is never signed; it may be used in handshake replies only',
        'settings.eventType: {hmac-hex:/type} may be used in handshake replies only',
      ],
    );
  });

  it('refuses a handshake recognised by, or HMACing, what is not signed: its reply would sign anything the request chose', () => {
    const oracle = {
      ...base,
      timestamp: { header: 'x-ts' },
      signed: '{timestamp}.{/id}',
      eventType: 'event',
      handshakes: [
        { when: { pointer: '/event', equals: 'url_validation' }, reply: { json: { token: '{hmac-hex:/plainToken}' } } },
        { when: { header: 'x-kind', equals: 'ping' }, reply: { status: 204 } },
        { method: 'POST', when: { query: 'validate' }, reply: { text: '{hmac-hex:/id}' } },
      ],
    };
    expect(new SenderProvider().configure(endpoint(oracle))).toEqual([
      'settings.signed: covers some fields of the body, which is stored whole; say "unsignedBody": true to accept the fields nothing signs',
      'settings.handshakes.0.reply: {hmac-hex:/plainToken} may only HMAC a signed field, in a handshake recognised by a signed field or header',
      'settings.handshakes.2.reply: {hmac-hex:/id} may only HMAC a signed field, in a handshake recognised by a signed field or header',
      'settings.handshakes.0.when: /event is not signed; say "unsignedBody": true to read it anyway',
      'settings.handshakes.1.when: header "x-kind" is not signed; list it in settings.unsignedHeaders to use it anyway',
    ]);
    // Said knowingly, an unsigned field may recognise a handshake, never be HMACed.
    expect(new SenderProvider().configure(endpoint({ ...oracle, unsignedBody: true, unsignedHeaders: ['x-kind'] }))).toEqual([
      'settings.handshakes.0.reply: {hmac-hex:/plainToken} may only HMAC a signed field, in a handshake recognised by a signed field or header',
      'settings.handshakes.2.reply: {hmac-hex:/id} may only HMAC a signed field, in a handshake recognised by a signed field or header',
    ]);
    // Recognised by an unsigned header said knowingly: one captured event with that header added would get its
    // reply, so the reply HMACs nothing, not even a signed field.
    expect(
      new SenderProvider().configure(
        endpoint({
          ...oracle,
          unsignedBody: true,
          unsignedHeaders: ['x-kind'],
          handshakes: [{ when: { header: 'x-kind', equals: 'check' }, reply: { text: '{hmac-hex:/id}' } }],
        }),
      ),
    ).toEqual([
      'settings.handshakes.0.reply: {hmac-hex:/id} may only HMAC a signed field, in a handshake recognised by a signed field or header',
    ]);
    // Zoom's: the whole body is signed, plainToken with it.
    expect(
      new SenderProvider().configure(endpoint({ ...oracle, signed: '{timestamp}.{body}', handshakes: oracle.handshakes.slice(0, 1) })),
    ).toEqual([]);
  });

  it('refuses an id that reads nothing of the request: every event after the first would be a duplicate', () => {
    const fixed = 'settings.eventId: reads nothing of the request (a body field, a header, {digest}, {each:...} or {timestamp})';
    expect(new SenderProvider().configure(endpoint({ ...base, eventId: 'always-the-same' }))).toEqual([fixed]);
    expect(new SenderProvider().configure(endpoint({ ...base, eventId: '{setting:x}-{method}', values: { x: 'fixed' } }))).toEqual([fixed]);
  });

  it('refuses a certificate host pattern that would close the anchoring group and match any host', () => {
    const sns = (hosts: string[]) =>
      endpoint({ preset: 'aws-sns', key: { type: 'rsa', certificate: { url: { pointer: '/SigningCertURL' }, hosts } } }, { secrets: [] });
    const problems = new SenderProvider().configure(sns(['sns\\.amazonaws\\.com)|(.*']));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^settings\.key\.certificate: Invalid regular expression/);
    expect(new SenderProvider().configure(sns(['sns\\.a\\.com|sns\\.b\\.com']))).toEqual([]);
  });

  it('refuses placeholders that have no value where they stand: every event would be refused, or no signature verify', () => {
    expect(
      new SenderProvider().configure(endpoint({ ...base, signed: '{body}', eventId: '{/id}-{crc32}', eventType: '{url}{body}' })),
    ).toEqual([
      'settings.eventId: {crc32} has no value here',
      'settings.eventType: {url} has no value here',
      'settings.eventType: {body} has no value here',
    ]);
    const bodyTime = { ...base, signed: '{timestamp}.{body}', timestamp: { pointer: '/ts' }, eventId: '{timestamp}-{/id}' };
    expect(new SenderProvider().configure(endpoint(bodyTime))).toEqual([
      'settings.signed: {timestamp} has no value when the timestamp is a body field: sign {/ts}',
      'settings.eventId: {timestamp} has no value when the timestamp is a body field: use {/ts}',
    ]);
    expect(new SenderProvider().configure(endpoint({ ...bodyTime, signed: '{body}', eventId: '{/ts}-{/id}' }))).toEqual([]);
  });

  it('refuses a caFile that is not PEM certificates, without echoing it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wi-ca-'));
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, 'not-a-certificate-but-private-text');
    const sns = (file: string) =>
      endpoint(
        { preset: 'aws-sns', key: { type: 'rsa', certificate: { url: { pointer: '/SigningCertURL' }, hosts: ['^h$'], caFile: file } } },
        { secrets: [] },
      );
    const problems = new SenderProvider().configure(sns(caFile));
    expect(problems).toEqual(['settings.key.certificate.caFile: not a PEM certificate file']);
    expect(problems.join('\n')).not.toContain('private-text');
  });

  it('with items, counts a body field as signed only where it names a signed field of an item', () => {
    const items = { ...base, items: { pointer: '/items' }, signature: { pointer: '/sig' }, signed: '{/ts}.{/id}' };
    // The item's /ts and /id are signed; the body's own /ts, /id and /type are not (nor the rest of each item).
    const partly =
      'settings.signed: covers some fields of the body, which is stored whole; say "unsignedBody": true to accept the fields nothing signs';
    expect(
      new SenderProvider().configure(
        endpoint({ ...items, timestamp: { pointer: '/ts' }, eventId: '{/id}', eventType: 'event' }, { expect: { '/id': 'x' } }),
      ),
    ).toEqual([
      partly,
      'settings.timestamp.pointer: the field is not signed (put it in settings.signed)',
      'settings.eventId: /id is not signed; say "unsignedBody": true to read it anyway',
      'expect./id: the field is not signed',
    ]);
    expect(
      new SenderProvider().configure(
        endpoint(
          { ...items, timestamp: { pointer: '/items/0/ts' }, eventId: '{/items/0/id}', eventType: 'event' },
          { expect: { '/items/1/id': 'x' } },
        ),
      ),
    ).toEqual([partly]);
    expect(new SenderProvider().configure(endpoint({ ...items, eventId: '{/items/00/id}', eventType: '{/items/0/idx}' }))).toEqual([
      partly,
      'settings.eventId: /items/00/id is not signed; say "unsignedBody": true to read it anyway',
      'settings.eventType: /items/0/idx is not signed; say "unsignedBody": true to read it anyway',
    ]);
    const each = { ...items, items: { pointer: '/items', each: '/Item' } };
    expect(new SenderProvider().configure(endpoint({ ...each, eventId: '{/items/0/Item/id}', eventType: 'event' }))).toEqual([partly]);
    expect(new SenderProvider().configure(endpoint({ ...each, eventId: '{/items/0/Items/id}', eventType: 'event' }))).toEqual([
      partly,
      'settings.eventId: /items/0/Items/id is not signed; say "unsignedBody": true to read it anyway',
    ]);
  });

  it('lists every mistake, one line each, never a secret', () => {
    const problems = new SenderProvider().configure(
      endpoint(
        {
          key: { type: 'ed25519', certificate: { url: { header: 'x-cert' }, hosts: ['^h$'] } },
          signature: { header: 'x-sig', pointer: '/sig' },
          signed: '{url}{setting:webhookId}{timestamp}{digest}{nonsense}',
          eventId: '{/id}',
          eventType: '{/type}',
          handshakes: [
            { method: 'GET', when: { pointer: '/type', equals: 'x' }, reply: { status: 204 } },
            {
              when: { query: 'hub.mode' },
              verifyToken: { query: 'hub.verify_token', secret: 'missing-label' },
              reply: { text: '{query:c}' },
            },
          ],
        },
        { secrets: [{ label: 'a', value: 'not-a-public-key-but-a-secret' }] },
      ),
    );
    expect(problems).toEqual([
      'settings.signed: unknown placeholder {nonsense}',
      'settings.signed: {digest} cannot be part of what is signed',
      'settings.publicUrl: the sender signs the URL: give it as configured at the sender',
      'settings.values.webhookId: used in settings.signed but not set',
      'settings.signed: covers no part of the body; say "unsignedBody": true to accept bodies nothing signs',
      'settings.signature: name exactly one of "header" or "pointer"',
      'settings.signed: uses {timestamp} but settings.timestamp is not set',
      'settings.eventId: /id is not signed; say "unsignedBody": true to read it anyway',
      'settings.eventType: /type is not signed; say "unsignedBody": true to read it anyway',
      'settings.handshakes.0: a GET handshake is recognised by a query parameter',
      'settings.handshakes.0.when: /type is not signed; say "unsignedBody": true to read it anyway',
      'settings.handshakes.1.verifyToken.secret: no secret labelled "missing-label"',
      'settings.key.certificate: only for "type": "rsa"',
      'secrets "a": the key comes from the sender\'s certificate; only a verify token may be listed',
    ]);
    expect(problems.join('\n')).not.toContain('not-a-public-key-but-a-secret');
  });

  it('looks up {setting:NAME} among the values given, never among what every object inherits', () => {
    expect(new SenderProvider().configure(endpoint({ ...base, signed: '{setting:constructor}{body}' }))).toEqual([
      'settings.values.constructor: used in settings.signed but not set',
    ]);
    expect(new SenderProvider().configure(endpoint({ ...base, eventId: '{/id}:{setting:toString}', signed: '{body}' }))).toEqual([
      'settings.values.toString: used in settings.eventId but not set',
    ]);
  });

  it('refuses a public key of the wrong kind, naming only its label', () => {
    const provider = new SenderProvider();
    const problems = provider.configure(
      endpoint({ ...base, key: { type: 'ecdsa-p256' } }, { secrets: [{ label: 'k', value: ed25519Hex }] }),
    );
    expect(problems).toEqual(['secrets "k": not a ecdsa-p256 public key (PEM, base64 DER)']);
  });

  it('refuses an unknown preset and a schema mistake inside a preset override', () => {
    expect(new SenderProvider().configure(endpoint({ preset: 'nope' }))).toEqual(['settings.preset: no preset "nope" in config/senders/']);
    expect(new SenderProvider().configure(endpoint({ preset: '../x' }))[0]).toMatch(/is not a preset name/);
    expect(new SenderProvider().configure(endpoint({ preset: 'zoom', body: 'xml' }))[0]).toMatch(/^settings\.body: /);
  });

  it('presets live in config/senders/, beside the endpoints file', () => {
    expect(presetsDirectory()).toBe(join(__dirname, '../../../config/senders'));
  });
});

describe('SenderProvider: form bodies', () => {
  const secret = 'a-secret-of-sixteen-bytes';

  it("keeps fields named like an object's own properties as sent (constructor, toString, __proto__)", () => {
    const provider = new SenderProvider();
    const e = endpoint({ ...base, body: 'form', signed: '{body}' });
    expect(provider.configure(e)).toEqual([]);
    const raw = Buffer.from('id=1&type=t&constructor=abc&toString=def&__proto__=ghi');
    const sig = createHmac('sha256', secret).update(raw).digest('hex');
    const verified = provider.verify({ headers: { 'x-sig': sig }, rawBody: raw, method: 'POST' }, e, new Date());
    expect(JSON.parse(JSON.stringify((verified as { payload: unknown }).payload))).toEqual(
      JSON.parse('{"id":"1","type":"t","constructor":"abc","toString":"def","__proto__":"ghi"}'),
    );
  });

  it('Twilio: a form with a field named constructor verifies', () => {
    const provider = new SenderProvider();
    const url = 'https://hooks.example.com/t';
    const e = endpoint({ preset: 'twilio', publicUrl: url });
    expect(provider.configure(e)).toEqual([]);
    const fields: [string, string][] = [
      ['MessageSid', 'SM1'],
      ['MessageStatus', 'delivered'],
      ['constructor', 'x'],
    ];
    const signed = url + fields.map(([k, v]) => k + v).join('');
    const sig = createHmac('sha1', secret).update(signed).digest('base64');
    const raw = Buffer.from(new URLSearchParams(fields).toString());
    expect(() => provider.verify({ headers: { 'x-twilio-signature': sig }, rawBody: raw, method: 'POST' }, e, new Date())).not.toThrow();
  });
});

describe('SenderProvider: a hash named by the body (key.hashBy)', () => {
  const secret = 'a-secret-of-sixteen-bytes';

  it.each(['constructor', '__proto__', 'toString'])('a body naming "%s" is 401 unsupported_signature_version, not a 500', (version) => {
    const provider = new SenderProvider();
    const e = endpoint({ ...base, key: { type: 'hmac', hashBy: { pointer: '/v', values: { '1': 'sha256' } } }, signed: '{body}' });
    expect(provider.configure(e)).toEqual([]);
    const raw = Buffer.from(JSON.stringify({ v: version, id: 'e1', type: 't' }));
    const sig = createHmac('sha256', secret).update(raw).digest('hex');
    expect(() => provider.verify({ headers: { 'x-sig': sig }, rawBody: raw, method: 'POST' }, e, new Date())).toThrow(
      expect.objectContaining({ status: 401, reason: 'unsupported_signature_version' }),
    );
  });
});
