import { createHmac } from 'node:crypto';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

/** Hostile input against the shipped presets: each is a 4xx with a stable reason, and writes nothing. */
const KEY = 'hostile-input-secret-0123456789abcdef';
const URL = 'https://hooks.example.com/x';
const hm = (hash: string, text: string, enc: 'hex' | 'base64' = 'hex') => createHmac(hash, KEY).update(text).digest(enc);
const now = () => String(Math.floor(Date.now() / 1000));
const j = JSON.stringify;

interface Probe {
  name: string;
  endpoint: string;
  body: string | Buffer;
  headers?: Record<string, string>;
  path?: string;
  type?: string;
}

const calendly = (body: string, header?: string): Probe => ({
  name: '',
  endpoint: 'calendly',
  body,
  headers: { 'calendly-webhook-signature': header ?? `t=${now()},v1=${hm('sha256', `${now()}.${body}`)}` },
});
const mailgun = (inner: Record<string, unknown>, eventData: unknown = { id: 'x', event: 'e' }) => {
  const ts = now();
  const token = 't'.repeat(50);
  return j({ signature: { timestamp: ts, token, signature: hm('sha256', ts + token), ...inner }, 'event-data': eventData });
};
const zoom = (body: string): Probe => ({
  name: '',
  endpoint: 'zoom',
  body,
  headers: { 'x-zm-request-timestamp': now(), 'x-zm-signature': `v0=${hm('sha256', `v0:${now()}:${body}`)}` },
});
const twilioForm = (form: string) => {
  const params = new URLSearchParams(form);
  const fields: Record<string, string[]> = {};
  for (const [k, v] of params) (fields[k] ??= []).push(v);
  const data = Object.keys(fields)
    .sort()
    .map((k) =>
      [...new Set(fields[k])]
        .sort()
        .map((v) => k + v)
        .join(''),
    )
    .join('');
  return { body: form, headers: { 'x-twilio-signature': hm('sha1', URL + data, 'base64') }, type: 'application/x-www-form-urlencoded' };
};
const deep = (n: number) => '{"a":' + '['.repeat(n) + ']'.repeat(n) + '}';

const PROBES: Probe[] = [
  { ...calendly('{}', 'garbage'), name: 'calendly: header without pairs' },
  { ...calendly('{}', 't=,v1='), name: 'calendly: empty pairs' },
  { ...calendly('{}', `t=${now()},v1=${'0'.repeat(15000)}`), name: 'calendly: 15 KB signature' },
  { ...calendly('{}', `t=${now()},v1=${'00,v1='.repeat(2400)}`), name: 'calendly: 2400 signatures' },
  { ...calendly('{}', `t=${now()},v1=\u00e9\u00e9`), name: 'calendly: latin1 signature' },
  { ...calendly('{}', `t=99999999999999999999,v1=00`), name: 'calendly: huge t' },
  { ...calendly(deep(50_000)), name: 'calendly: signed 50k-deep body' },
  { ...calendly(j({ event: 'e\u0000', payload: { uri: 'u' } })), name: 'calendly: signed NUL in id' },
  { ...calendly(j({ event: 'invitee.created', payload: { uri: '\u00e9' } })), name: 'calendly: signed non-ASCII id' },
  { ...calendly(j({ event: 'invitee.created', payload: { uri: 'x'.repeat(300) } })), name: 'calendly: signed 300-char id' },
  { ...calendly('{"event":"a","event":"b"}'), name: 'calendly: signed duplicate keys, no uri' },
  { ...calendly('[1]'), name: 'calendly: signed array body' },
  { ...calendly('\ufeff{}'), name: 'calendly: signed BOM body' },
  { name: 'mailgun: signature object', endpoint: 'mailgun', body: mailgun({ signature: { a: 1 } }) },
  { name: 'mailgun: timestamp __proto__', endpoint: 'mailgun', body: mailgun({ timestamp: '__proto__' }) },
  { name: 'mailgun: timestamp object', endpoint: 'mailgun', body: mailgun({ timestamp: { valueOf: 1 } }) },
  { name: 'mailgun: event-data __proto__', endpoint: 'mailgun', body: '{"signature":{"signature":"00"},"__proto__":{"x":1}}' },
  { name: 'mailgun: signed, id __proto__ object', endpoint: 'mailgun', body: mailgun({}, { id: { __proto__: 1 }, event: 'e' }) },
  {
    name: 'mailgun: signed, 100k deep event-data',
    endpoint: 'mailgun',
    body: mailgun({}).replace('"event-data":{', `"deep":${deep(100_000)},"event-data":{`),
  },
  { name: 'mailgun: not UTF-8', endpoint: 'mailgun', body: Buffer.from([0x7b, 0xff, 0x7d]) },
  { name: 'mailgun: body is a string', endpoint: 'mailgun', body: '"x"' },
  {
    name: 'twilio: unsigned __proto__ form',
    endpoint: 'twilio',
    body: '__proto__=1&constructor=2',
    headers: { 'x-twilio-signature': 'AAAA' },
    type: 'application/x-www-form-urlencoded',
  },
  {
    name: 'twilio: form not UTF-8',
    endpoint: 'twilio',
    body: Buffer.from('a=%FF\xff', 'latin1'),
    headers: { 'x-twilio-signature': 'AAAA' },
    type: 'application/x-www-form-urlencoded',
  },
  { name: 'twilio: signed, repeated MessageSid', endpoint: 'twilio', ...twilioForm('MessageSid=SM1&MessageSid=SM1&MessageStatus=sent') },
  { name: 'twilio: signed, NUL in a field', endpoint: 'twilio', ...twilioForm('MessageSid=SM2&MessageStatus=sent&Body=%00') },
  {
    name: 'sns: SignatureVersion constructor',
    endpoint: 'sns',
    body: j({ SignatureVersion: 'constructor', Signature: 'AAAA', SigningCertURL: 'https://sns.us-east-1.amazonaws.com/a.pem' }),
    type: 'text/plain',
  },
  {
    name: 'sns: SignatureVersion __proto__',
    endpoint: 'sns',
    body: '{"SignatureVersion":"__proto__","Signature":"AAAA"}',
    type: 'text/plain',
  },
  {
    name: 'sns: cert URL with userinfo',
    endpoint: 'sns',
    body: j({ SignatureVersion: '2', Signature: 'AAAA', SigningCertURL: 'https://a@sns.us-east-1.amazonaws.com/a.pem' }),
    type: 'text/plain',
  },
  {
    name: 'sns: cert URL http',
    endpoint: 'sns',
    body: j({ SignatureVersion: '2', Signature: 'AAAA', SigningCertURL: 'http://sns.us-east-1.amazonaws.com/a.pem' }),
    type: 'text/plain',
  },
  {
    name: 'sns: cert URL trailing dot host',
    endpoint: 'sns',
    body: j({ SignatureVersion: '2', Signature: 'AAAA', SigningCertURL: 'https://sns.us-east-1.amazonaws.com./a.pem' }),
    type: 'text/plain',
  },
  {
    name: 'sns: cert URL not a string',
    endpoint: 'sns',
    body: j({ SignatureVersion: '2', Signature: 'AAAA', SigningCertURL: ['x'] }),
    type: 'text/plain',
  },
  { name: 'adyen: items null', endpoint: 'adyen', body: j({ notificationItems: [null] }) },
  { name: 'adyen: items object', endpoint: 'adyen', body: j({ notificationItems: { 0: {} } }) },
  { name: 'adyen: items empty', endpoint: 'adyen', body: j({ notificationItems: [] }) },
  { name: 'graph: value [null]', endpoint: 'graph', body: j({ value: [null] }) },
  { name: 'graph: clientState object', endpoint: 'graph', body: j({ value: [{ clientState: { a: 1 } }] }) },
  { name: 'graph: validationToken control chars', endpoint: 'graph', body: '', path: '?validationToken=%0d%0aSet-Cookie:x' },
  { name: 'graph: validationToken 2000 chars', endpoint: 'graph', body: '', path: `?validationToken=${'a'.repeat(2000)}` },
  { ...zoom(j({ event: 'endpoint.url_validation', payload: { plainToken: '\u00e9' } })), name: 'zoom: signed unicode plainToken' },
  { ...zoom(j({ event: 'endpoint.url_validation', payload: { plainToken: { a: 1 } } })), name: 'zoom: signed object plainToken' },
  { ...zoom(j({ event: 'endpoint.url_validation' })), name: 'zoom: signed, no plainToken' },
  { name: 'zoom: timestamp 1e3', endpoint: 'zoom', body: '{}', headers: { 'x-zm-request-timestamp': '1e3', 'x-zm-signature': 'v0=00' } },
  {
    name: 'zoom: timestamp negative',
    endpoint: 'zoom',
    body: '{}',
    headers: { 'x-zm-request-timestamp': '-1', 'x-zm-signature': 'v0=00' },
  },
  {
    name: 'zoom: signature wrong prefix',
    endpoint: 'zoom',
    body: '{}',
    headers: { 'x-zm-request-timestamp': now(), 'x-zm-signature': 'v1=00' },
  },
];

describe('provider "sender": hostile input against the presets', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    const secrets = [{ label: 'current', value: KEY }];
    const ep = (id: string, settings: Record<string, unknown>, s: unknown[] = secrets) => ({
      id,
      provider: 'sender',
      tenantId: 'acme',
      secrets: s,
      settings,
    });
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        ep('calendly', { preset: 'calendly' }),
        ep('mailgun', { preset: 'mailgun' }),
        ep('twilio', { preset: 'twilio', publicUrl: URL }),
        ep('sns', { preset: 'aws-sns' }, []),
        ep('adyen', { preset: 'adyen' }, [{ label: 'current', value: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056' }]),
        ep('graph', { preset: 'microsoft-graph' }),
        ep('zoom', { preset: 'zoom' }),
      ],
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it.each(PROBES.map((p) => [p.name, p] as const))('%s: 4xx with a stable reason, nothing written', async (_, p) => {
    const res = await request(t.url)
      .post(`/webhooks/${p.endpoint}${p.path ?? ''}`)
      .set({ 'content-type': p.type ?? 'application/json', ...p.headers })
      .serialize((b: unknown) => b as string)
      .send(p.body as string);
    const rows = await db.query('SELECT event_id FROM webhook_inbox');
    await db.query('TRUNCATE webhook_inbox');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.reason).toMatch(/^[a-z_]+$/);
    expect(rows).toEqual([]);
  });
});
