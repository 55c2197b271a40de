import { createHmac } from 'node:crypto';
import { gzipSync, deflateSync } from 'node:zlib';
import { signRequest } from '../../../src/cli/sign-request';
import { MAX_PAYLOAD_DEPTH } from '../../../src/common/json-depth';
import { HttpResult, send } from './http';
import { ENDPOINT } from './load-generator';

/** An acceptable answer: status, and the `reason` (4xx/5xx) or result `status` (200) it must carry. */
export type Outcome = [status: number, reasonOrResult?: string | string[]];

export interface HostileCase {
  category: string;
  /** 'reject': must change nothing in the inbox; 'valid': may add a row (a new event id) or count a duplicate. */
  phase: 'reject' | 'valid';
  send(baseUrl: string): Promise<HttpResult>;
  expect: Outcome[];
  /** For 'valid' cases: the event id that may be stored (checked byte-exact afterwards). */
  newEventId?: string;
  /** An extra check of the answer (e.g. an SQL-looking filter must match nothing). */
  verify?: (res: HttpResult) => string | undefined;
}

export interface HostileContext {
  secret: string;
  operatorToken: string;
  viewerToken: string;
  metricsToken: string;
  toleranceSeconds: number;
  maxBodyBytes: number;
  runId: string;
  random: () => number;
  /** The body of an event already in the inbox: a 200 on it is a duplicate and writes no row. */
  baseBody: string;
}

const SQL_AND_PATH = [
  "'OR'1'='1",
  "';DROP/**/TABLE/**/webhook_inbox;--",
  '"--',
  '1;SELECT/**/pg_sleep(5)',
  '$1',
  '\\',
  '../../admin/inbox',
  '..%2f..%2fetc%2fpasswd',
  '%00',
  '${jndi:ldap://x/a}',
  '{{7*7}}',
  '<script>',
  '*',
  '%',
  '_',
  '?x=1#y',
  '/webhooks/stripe-acme',
];

/** A Stripe v1 signature over raw bytes (the CLI signer takes text). */
function signBytes(secret: string, body: Buffer, at = Date.now()): string {
  const t = Math.floor(at / 1000);
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex')}`;
}

/** Generates the hostile requests: `scale` 1 gives a little over 2,000. */
export function hostileCases(c: HostileContext, scale = 1): HostileCase[] {
  const r = c.random;
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: T[]): T => xs[int(xs.length)];
  const n = (x: number) => Math.round(x * scale);
  let seq = 0;
  const newId = (prefix = 'evt_hostile') => `${prefix}_${c.runId}_${++seq}`;
  const webhook =
    (path = `/webhooks/${ENDPOINT}`) =>
    (base: string) =>
      base + path;
  const post = (headers: Record<string, string | string[]>, body: string | Buffer, path?: string) => (base: string) =>
    send(webhook(path)(base), { method: 'POST', headers, body });
  const signed = (body: string, at?: Date) => signRequest('stripe', c.secret, body, { at });
  const eventBody = (id: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      id,
      object: 'event',
      type: 'customer.created',
      created: 1_790_000_000,
      livemode: false,
      data: { object: {} },
      ...extra,
    });
  const SIG_REJECT: Outcome[] = [
    [401, ['invalid_signature', 'unsupported_signature_version', 'timestamp_out_of_tolerance', 'missing_signature', 'invalid_timestamp']],
  ];
  const NEW_ROW: Outcome[] = [[200, ['ignored', 'accepted']]];
  const cases: HostileCase[] = [];
  const add = (x: HostileCase) => cases.push(x);

  // Single-byte mutations of a valid signed request: body, then the signature header.
  for (let i = 0; i < n(400); i++) {
    const s = signed(c.baseBody);
    const body = Buffer.from(s.body);
    const at = int(body.length);
    let b = int(256);
    if (b === body[at]) b = (b + 1) % 256;
    body[at] = b;
    add({ category: 'mutated body byte', phase: 'reject', send: post(s.headers, body), expect: [[401, 'invalid_signature']] });
  }
  for (let i = 0; i < n(300); i++) {
    const s = signed(c.baseBody);
    const sig = s.headers['stripe-signature'];
    const at = int(sig.length);
    let ch = 0x21 + int(94);
    if (ch === sig.charCodeAt(at)) ch = ch === 0x7e ? 0x21 : ch + 1;
    const mutated = sig.slice(0, at) + String.fromCharCode(ch) + sig.slice(at + 1);
    add({
      category: 'mutated signature byte',
      phase: 'reject',
      send: post({ ...s.headers, 'stripe-signature': mutated }, s.body),
      expect: SIG_REJECT,
    });
  }

  // Dropped, duplicated and oversized headers.
  for (let i = 0; i < n(120); i++) {
    const s = signed(c.baseBody);
    const { 'stripe-signature': sig, ...rest } = s.headers;
    const variant = i % 4;
    if (variant === 0) add({ category: 'dropped header', phase: 'reject', send: post(rest, s.body), expect: [[401, 'missing_signature']] });
    if (variant === 1)
      add({
        category: 'dropped header',
        phase: 'reject',
        send: post({ ...rest, 'stripe-signature': '' }, s.body),
        expect: [[401, 'missing_signature']],
      });
    if (variant === 2)
      add({
        category: 'dropped header',
        phase: 'reject',
        send: post({ ...rest, 'stripe-signature': sig.replace(/,v1=.*/, '') }, s.body),
        expect: [[401, 'unsupported_signature_version']],
      });
    if (variant === 3) {
      const { 'content-type': _ct, ...noType } = s.headers;
      add({ category: 'dropped header', phase: 'valid', send: post(noType, s.body), expect: [[200, 'duplicate']] });
    }
  }
  for (let i = 0; i < n(100); i++) {
    const s = signed(c.baseBody);
    const sig = s.headers['stripe-signature'];
    const junk = `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`;
    const variant = i % 4;
    if (variant === 0)
      add({
        category: 'duplicated header',
        phase: 'valid',
        send: post({ ...s.headers, 'stripe-signature': [sig, sig] }, s.body),
        expect: [[200, 'duplicate']],
      });
    // With two values Node joins them; the first timestamp is the one verified.
    if (variant === 1)
      add({
        category: 'duplicated header',
        phase: 'valid',
        send: post({ ...s.headers, 'stripe-signature': [junk, sig] }, s.body),
        expect: [
          [200, 'duplicate'],
          [401, 'invalid_signature'],
        ],
      });
    if (variant === 2)
      add({
        category: 'duplicated header',
        phase: 'valid',
        send: post({ ...s.headers, 'stripe-signature': [sig, junk] }, s.body),
        expect: [[200, 'duplicate']],
      });
    // Node's HTTP parser refuses a repeated Content-Length before the app sees it.
    if (variant === 3)
      add({
        category: 'duplicated header',
        phase: 'reject',
        send: post({ ...s.headers, 'content-length': [String(Buffer.byteLength(s.body)), String(Buffer.byteLength(s.body))] }, s.body),
        expect: [[400]],
      });
  }
  for (let i = 0; i < n(80); i++) {
    const s = signed(c.baseBody);
    const variant = i % 4;
    // Past Node's 16 KiB header limit: 431 from the HTTP parser, before any route.
    if (variant === 0)
      add({
        category: 'oversized header',
        phase: 'reject',
        send: post({ ...s.headers, 'x-junk': 'a'.repeat(20_000 + int(20_000)) }, s.body),
        expect: [[431]],
      });
    if (variant === 1)
      add({
        category: 'oversized header',
        phase: 'reject',
        send: post({ ...s.headers, 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'ab'.repeat(6_000)}` }, s.body),
        expect: [[401, 'invalid_signature']],
      });
    if (variant === 2)
      add({
        category: 'oversized header',
        phase: 'valid',
        send: post({ ...s.headers, 'stripe-signature': `${s.headers['stripe-signature']},v0=${'f'.repeat(8_000)}` }, s.body),
        expect: [[200, 'duplicate']],
      });
    if (variant === 3)
      add({
        category: 'oversized header',
        phase: 'valid',
        send: post({ ...s.headers, 'x-junk': 'b'.repeat(10_000) }, s.body),
        expect: [[200, 'duplicate']],
      });
  }

  // Stale and future timestamps.
  for (let i = 0; i < n(200); i++) {
    const future = i % 2 === 1;
    const offset = (c.toleranceSeconds + 10 + int(30 * 86_400)) * 1000;
    const s = signed(c.baseBody, new Date(Date.now() + (future ? offset : -offset)));
    add({
      category: future ? 'future timestamp' : 'stale timestamp',
      phase: 'reject',
      send: post(s.headers, s.body),
      expect: [[401, 'timestamp_out_of_tolerance']],
    });
  }

  // Wrong encodings.
  for (let i = 0; i < n(100); i++) {
    const variant = i % 5;
    const json = eventBody(newId());
    if (variant === 0 || variant === 1) {
      const packed = variant === 0 ? gzipSync(json) : deflateSync(json);
      const enc = variant === 0 ? 'gzip' : 'deflate';
      add({
        category: 'wrong encoding',
        phase: 'reject',
        send: post(
          { 'content-type': 'application/json', 'content-encoding': enc, 'stripe-signature': signBytes(c.secret, packed) },
          packed,
        ),
        expect: [[400, 'unsupported_content_encoding']],
      });
    }
    if (variant === 2) {
      const utf16 = Buffer.from(json, 'utf16le');
      add({
        category: 'wrong encoding',
        phase: 'reject',
        send: post({ 'content-type': 'application/json; charset=utf-16', 'stripe-signature': signBytes(c.secret, utf16) }, utf16),
        expect: [
          [401, 'invalid_signature'],
          [400, 'malformed_json'],
        ],
      });
    }
    if (variant === 3) {
      const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]);
      add({
        category: 'wrong encoding',
        phase: 'reject',
        send: post({ 'content-type': 'application/json', 'stripe-signature': signBytes(c.secret, bom) }, bom),
        expect: [[401, 'invalid_signature']],
      });
    }
    if (variant === 4) {
      const s = signed(c.baseBody);
      add({
        category: 'wrong encoding',
        phase: 'valid',
        send: post({ ...s.headers, 'content-type': 'text/plain; charset=iso-8859-1' }, s.body),
        expect: [[200, 'duplicate']],
      });
    }
  }

  // Bodies over the limit: declared, and streamed without a length. The server answers 413 and
  // closes without reading the rest; a client still writing may see the reset before the answer.
  const TOO_LARGE: Outcome[] = [
    [413, 'body_too_large'],
    [0, ['EPIPE', 'ECONNRESET']],
  ];
  for (let i = 0; i < n(60); i++) {
    const big = Buffer.alloc(c.maxBodyBytes + 1 + int(c.maxBodyBytes), 0x20);
    const sig = signBytes(c.secret, big);
    if (i % 2 === 0) {
      add({
        category: 'body over limit',
        phase: 'reject',
        send: post({ 'content-type': 'application/json', 'stripe-signature': sig }, big),
        expect: TOO_LARGE,
      });
    } else {
      const chunkSize = 64 * 1024;
      const chunks = Array.from({ length: Math.ceil(big.length / chunkSize) }, (_, k) => ({
        data: big.subarray(k * chunkSize, (k + 1) * chunkSize),
        delayMs: 0,
      }));
      add({
        category: 'body over limit',
        phase: 'reject',
        send: (base) =>
          send(webhook()(base), {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'stripe-signature': sig, 'transfer-encoding': 'chunked' },
            chunks,
          }),
        expect: TOO_LARGE,
      });
    }
  }

  // Slow bodies: complete (a duplicate), or cut off by the client (no answer, nothing written).
  for (let i = 0; i < n(40); i++) {
    const s = signed(c.baseBody);
    const bytes = Buffer.from(s.body);
    const parts = 4;
    const size = Math.ceil(bytes.length / parts);
    const chunks = Array.from({ length: parts }, (_, k) => ({ data: bytes.subarray(k * size, (k + 1) * size), delayMs: 100 + int(200) }));
    if (i % 4 !== 3) {
      add({
        category: 'slow body',
        phase: 'valid',
        send: (base) => send(webhook()(base), { method: 'POST', headers: s.headers, chunks }),
        expect: [[200, 'duplicate']],
      });
    } else {
      add({
        category: 'slow body',
        phase: 'reject',
        send: (base) =>
          send(webhook()(base), {
            method: 'POST',
            headers: { ...s.headers, 'content-length': String(bytes.length) },
            chunks: chunks.slice(0, 2),
            abortAfterChunks: true,
          }),
        expect: [[0]],
      });
    }
  }

  // Invalid UTF-8 under a signature over the raw bytes.
  const BAD_UTF8 = [[0xff], [0xfe, 0xfe], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf], [0x80]];
  for (let i = 0; i < n(100); i++) {
    const bad = Buffer.from(pick(BAD_UTF8));
    const inId = i % 2 === 0;
    const id = newId();
    const [before, after] = (inId ? eventBody(`${id}MARK`) : eventBody(id, { note: 'MARK' })).split('MARK');
    const body = Buffer.concat([Buffer.from(before), bad, Buffer.from(after)]);
    add({
      category: 'invalid UTF-8',
      phase: 'reject',
      send: post({ 'content-type': 'application/json', 'stripe-signature': signBytes(c.secret, body) }, body),
      expect: [[401, 'invalid_signature']],
    });
  }

  // Deeply nested and huge-number JSON under a valid signature.
  for (let i = 0; i < n(60); i++) {
    const depth = pick([64, 1_000, 10_000, 50_000, 100_000]);
    const id = newId();
    const nested =
      i % 2 ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(Math.min(depth, 40_000)) + '1' + '}'.repeat(Math.min(depth, 40_000));
    const s = signed(eventBody(id, { deep: 'X' }).replace('"X"', nested));
    // Past MAX_PAYLOAD_DEPTH (256) it is refused at receipt, before any walk; below, stored like any event.
    if (depth > MAX_PAYLOAD_DEPTH)
      add({ category: 'deeply nested JSON', phase: 'reject', send: post(s.headers, s.body), expect: [[400, 'payload_too_deep']] });
    else add({ category: 'deeply nested JSON', phase: 'valid', send: post(s.headers, s.body), newEventId: id, expect: NEW_ROW });
  }
  const NUMBERS = [
    '1e400',
    '-1e-400',
    '123456789012345678901234567890',
    '1e1000000',
    '9'.repeat(20_000),
    `0.${'0'.repeat(20_000)}1`,
    '1e131071',
    '1e131072',
    '-0',
    '1E+2',
  ];
  for (let i = 0; i < n(80); i++) {
    const id = newId();
    const num = NUMBERS[i % NUMBERS.length];
    const s = signed(eventBody(id, { data: { object: { amount: 'X' } } }).replace('"X"', num));
    add({
      category: 'huge-number JSON',
      phase: 'valid',
      send: post(s.headers, s.body),
      newEventId: id,
      expect: [...NEW_ROW, [400, 'unsupported_json']],
    });
  }

  // Very long and odd event ids.
  const printable = () => String.fromCharCode(0x21 + int(94));
  for (let i = 0; i < n(200); i++) {
    const variant = i % 8;
    if (variant === 0 || variant === 1) {
      const prefix = `${newId('L')}_`;
      const len = Math.max(prefix.length, variant === 0 ? 255 : 1 + int(254));
      const exact = (prefix + Array.from({ length: 255 }, printable).join('')).slice(0, len);
      const s = signed(eventBody(exact));
      add({ category: 'long and odd event ids', phase: 'valid', send: post(s.headers, s.body), newEventId: exact, expect: NEW_ROW });
    } else {
      const odd: unknown[] = [
        'e'.repeat(256 + int(10_000)),
        `evt ${int(1e6)}`,
        `evt\t${int(1e6)}`,
        `evt_é${int(1e6)}`,
        `evt_🚀${int(1e6)}`,
        `evt_\u007f${int(1e6)}`,
        '',
        int(1e9),
        null,
        true,
        [`evt_${int(1e6)}`],
        { id: 'x' },
      ];
      const id = odd[int(odd.length)];
      const missingType = variant === 7;
      const body = missingType ? JSON.stringify({ id: newId(), object: 'event', created: 1, data: { object: {} } }) : eventBody(id);
      const s = signed(body);
      add({
        category: 'long and odd event ids',
        phase: 'reject',
        send: post(s.headers, s.body),
        expect: [[400, missingType ? 'invalid_event_type' : 'invalid_event_id']],
      });
    }
  }

  // SQL and path metacharacters in event ids (stored verbatim) and in admin filters.
  for (let i = 0; i < n(100); i++) {
    const id = `evt_${SQL_AND_PATH[i % SQL_AND_PATH.length]}_${c.runId}_${++seq}`;
    const s = signed(eventBody(id));
    add({ category: 'SQL/path metacharacters in ids', phase: 'valid', send: post(s.headers, s.body), newEventId: id, expect: NEW_ROW });
  }
  const op = { authorization: `Bearer ${c.operatorToken}` };
  const q = (s: string) => encodeURIComponent(s);
  const get =
    (path: string, headers: Record<string, string> = op) =>
    (base: string) =>
      send(base + path, { headers });
  const empty = (res: HttpResult) => (Array.isArray(res.json?.items) && res.json.items.length === 0 ? undefined : 'a filter matched rows');
  for (let i = 0; i < n(250); i++) {
    const meta = SQL_AND_PATH[i % SQL_AND_PATH.length];
    const variant = i % 10;
    const category = 'SQL/path metacharacters in admin filters';
    if (variant === 0) add({ category, phase: 'reject', send: get(`/admin/inbox?tenant=${q(meta)}`), expect: [[200]], verify: empty });
    if (variant === 1)
      add({ category, phase: 'reject', send: get(`/admin/inbox?status=${q(`done${meta}`)}`), expect: [[400, 'invalid_filter']] });
    if (variant === 2) add({ category, phase: 'reject', send: get(`/admin/inbox?cursor=${q(meta)}`), expect: [[400, 'invalid_cursor']] });
    if (variant === 3)
      add({ category, phase: 'reject', send: get(`/admin/inbox?limit=${q(`1${meta}`)}`), expect: [[400, 'invalid_limit']] });
    if (variant === 4) add({ category, phase: 'reject', send: get(`/admin/inbox?from=${q(meta)}`), expect: [[400, 'invalid_filter']] });
    if (variant === 5) add({ category, phase: 'reject', send: get(`/admin/inbox/${q(`1${meta}`)}`), expect: [[400, 'invalid_id']] });
    if (variant === 6) add({ category, phase: 'reject', send: get(`/admin/outbox?tenant=${q(meta)}`), expect: [[200]], verify: empty });
    if (variant === 7)
      add({
        category,
        phase: 'reject',
        send: get(`/admin/orders/acme/${q(meta)}`),
        expect: [
          [404, 'order_not_found'],
          [400, ['invalid_id', 'bad_request']],
        ],
      });
    if (variant === 8) add({ category, phase: 'reject', send: get(`/admin/inbox?${q(meta)}=1`), expect: [[400, 'invalid_filter']] });
    if (variant === 9) {
      add({
        category,
        phase: 'reject',
        send: (base) =>
          send(`${base}/admin/inbox/replay`, {
            method: 'POST',
            headers: { ...op, 'content-type': 'application/json' },
            body: JSON.stringify({ filter: { tenant: meta, type: meta }, dryRun: true, reason: 'fault suite: SQL in a filter' }),
          }),
        expect: [[200]],
        verify: (res) => (res.json?.count === 0 ? undefined : `dry run counted ${res.json?.count}`),
      });
    }
  }

  // Unknown endpoints and routes.
  for (let i = 0; i < n(150); i++) {
    const s = signed(c.baseBody);
    const variant = i % 6;
    const category = 'unknown endpoints';
    if (variant === 0)
      add({
        category,
        phase: 'reject',
        send: post(s.headers, s.body, `/webhooks/${q(`${pick(SQL_AND_PATH)}${int(1e6)}`)}`),
        expect: [[404, 'unknown_endpoint']],
      });
    if (variant === 1)
      add({
        category,
        phase: 'reject',
        send: post(s.headers, s.body, `/webhooks/${'x'.repeat(1 + int(4_000))}`),
        expect: [[404, 'unknown_endpoint']],
      });
    if (variant === 2)
      add({ category, phase: 'reject', send: post(s.headers, s.body, '/webhooks/%ff%fe'), expect: [[400, 'bad_request']] });
    if (variant === 3)
      add({
        category,
        phase: 'reject',
        send: (base) =>
          send(`${base}/webhooks/${ENDPOINT}`, { method: pick(['GET', 'PUT', 'DELETE', 'PATCH']), headers: s.headers, body: s.body }),
        expect: [[404, 'not_found']],
      });
    if (variant === 4)
      add({
        category,
        phase: 'reject',
        send: post(s.headers, s.body, `/${q(pick(SQL_AND_PATH))}${int(1e6)}`),
        expect: [[404, 'not_found']],
      });
    if (variant === 5) add({ category, phase: 'reject', send: get(`/admin/${q(pick(SQL_AND_PATH))}x`), expect: [[404, 'not_found']] });
  }

  // Admin calls without, with a wrong and with an under-privileged token.
  const viewer = { authorization: `Bearer ${c.viewerToken}`, 'content-type': 'application/json' };
  const reason = JSON.stringify({ reason: 'fault suite' });
  const OPERATOR_ONLY: [string, string][] = [
    ['/admin/inbox/1/replay', reason],
    ['/admin/inbox/1/quarantine', reason],
    ['/admin/inbox/replay', JSON.stringify({ filter: {}, dryRun: false, reason: 'fault suite' })],
    ['/admin/outbox/1/retry', reason],
    ['/admin/outbox/1/resolve', JSON.stringify({ outcome: 'delivered', reason: 'fault suite' })],
    ['/admin/orders', JSON.stringify({ tenantId: 'acme', id: 'hostile', totalMinor: 1, currency: 'eur', customerEmail: 'a@example.com' })],
  ];
  const READS = ['/admin/inbox', '/admin/outbox', '/admin/stats', '/admin/audit', '/admin/orders/acme/x', '/admin/inbox/1'];
  for (let i = 0; i < n(250); i++) {
    const variant = i % 6;
    const category = 'admin auth';
    const path = pick(READS);
    if (variant === 0) add({ category, phase: 'reject', send: get(path, {}), expect: [[401, 'missing_token']] });
    if (variant === 1)
      add({
        category,
        phase: 'reject',
        send: get(path, { authorization: pick([`Basic ${Buffer.from('a:b').toString('base64')}`, 'Bearer', 'Bearer  ', c.operatorToken]) }),
        expect: [[401, 'missing_token']],
      });
    if (variant === 2)
      add({
        category,
        phase: 'reject',
        send: get(path, {
          authorization: `Bearer ${pick([`${c.operatorToken}x`, c.operatorToken.slice(1), c.metricsToken, `x${int(1e9)}`, "'OR'1'='1--"])}`,
        }),
        expect: [[401, 'invalid_token']],
      });
    if (variant === 3 || variant === 4) {
      const [p, body] = pick(OPERATOR_ONLY);
      add({
        category,
        phase: 'reject',
        send: (base) => send(base + p, { method: 'POST', headers: viewer, body }),
        expect: [[403, 'insufficient_role']],
      });
    }
    if (variant === 5)
      add({
        category,
        phase: 'reject',
        send: get('/metrics', pick<Record<string, string>>([{}, { authorization: 'Bearer wrong-metrics-token' }])),
        expect: [[401]],
      });
  }
  return cases;
}

/** `200 duplicate`, `401 invalid_signature`, `431`, `no answer`. */
export function outcomeLabel(res: HttpResult): string {
  if (res.status === 0) return `no answer (${res.error})`;
  const detail = res.status === 200 ? res.json?.status : res.json?.reason;
  return detail ? `${res.status} ${detail}` : String(res.status);
}

export function matches(res: HttpResult, expect: Outcome[]): boolean {
  return expect.some(([status, detail]) => {
    if (res.status !== status) return false;
    if (detail === undefined) return true;
    const actual = status === 0 ? res.error : status === 200 ? res.json?.status : res.json?.reason;
    return Array.isArray(detail) ? detail.includes(actual) : detail === actual;
  });
}
