import { createHmac } from 'node:crypto';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { signGithub, signShopify, signStandard, signStripe, stripeEvent } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';

const STRIPE_SECRET = 'whsec_current_secret_for_tests';
const STRIPE_OLD_SECRET = 'whsec_old_secret_for_tests';
const GITHUB_SECRET = 'github-secret-for-tests';
const SHOPIFY_SECRET = 'shopify-secret-for-tests';
const STANDARD_SECRET = `whsec_${Buffer.from('standard-secret-for-tests').toString('base64')}`;
const ROTATION_END = new Date(Date.now() + 3600_000);

const endpoints = [
  {
    id: 'stripe-acme',
    provider: 'stripe',
    tenantId: 'acme',
    secrets: [
      { label: '2026-11', value: STRIPE_SECRET },
      { label: '2026-10', value: STRIPE_OLD_SECRET, notAfter: ROTATION_END.toISOString() },
    ],
    toleranceSeconds: 300,
    maxBodyBytes: 4096,
    eventTypes: ['payment_intent.succeeded', 'charge.refunded'],
    expect: { livemode: false },
  },
  { id: 'github-acme', provider: 'github', tenantId: 'acme', secrets: [{ label: 'gh', value: GITHUB_SECRET }] },
  { id: 'shopify-acme', provider: 'shopify', tenantId: 'acme', secrets: [{ label: 'shop', value: SHOPIFY_SECRET }] },
  { id: 'standard-acme', provider: 'standard', tenantId: 'acme', secrets: [{ label: 'std', value: STANDARD_SECRET }] },
];

describe('Receipt: POST /webhooks/:endpointId (scenarios 1-5, 7-9, 11, 12, 12a)', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints }, (started) => ({ db, t } = started));
  beforeEach(async () => {
    await db.query('TRUNCATE webhook_inbox');
    t.clock.offsetMs = 0;
  });

  const post = (endpoint: string, signed: { headers: Record<string, string>; body: string | Buffer }) =>
    request(t.url).post(`/webhooks/${endpoint}`).set(signed.headers).send(signed.body);
  /** The inbox rows, each with its payload read where it is (its day). */
  const inbox = () =>
    db.query(
      `SELECT i.*, p.payload FROM webhook_inbox i LEFT JOIN webhook_inbox_payloads p ON p.day = i.payload_day AND p.inbox_id = i.id ORDER BY i.id`,
    );

  it('1: accepts a Stripe event signed by the official SDK, with the verifying secret label', async () => {
    const event = stripeEvent({ id: 'evt_s1' });
    const signed = signStripe(event, STRIPE_SECRET);
    const res = await post('stripe-acme', signed);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_s1' });
    const [row] = await inbox();
    expect(row).toMatchObject({
      status: 'pending',
      event_id: 'evt_s1',
      source_scope: 'acme:stripe:platform:test',
      tenant_id: 'acme',
      provider: 'stripe',
      endpoint_id: 'stripe-acme',
      event_type: 'payment_intent.succeeded',
      verified_with: '2026-11',
      deliveries: 1,
      digest_conflicts: 0,
    });
    expect(row.payload).toEqual(event);
    const { createHash } = await import('node:crypto');
    expect(row.payload_sha256).toBe(createHash('sha256').update(signed.body).digest('hex'));
  });

  it('2: one changed byte is 401 and writes nothing', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_s2' }), STRIPE_SECRET);
    const tampered = signed.body.replace('"amount":1000', '"amount":9000');
    expect(tampered).not.toBe(signed.body);
    const res = await post('stripe-acme', { ...signed, body: tampered });
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('invalid_signature');
    expect(await inbox()).toHaveLength(0);
  });

  it('3: a timestamp outside the tolerance, past or future, is 401 with no row', async () => {
    // Well past the 300 s tolerance: a loaded machine may cross a second boundary between signing and checking.
    const now = Math.floor(Date.now() / 1000);
    for (const timestamp of [now - 310, now + 310]) {
      const res = await post('stripe-acme', signStripe(stripeEvent(), STRIPE_SECRET, timestamp));
      expect(res.status).toBe(401);
      expect(res.body.reason).toBe('timestamp_out_of_tolerance');
    }
    const std = signStandard({ type: 'x' }, STANDARD_SECRET, 'msg_old', new Date(Date.now() - 310_000));
    const res = await post('standard-acme', std);
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('timestamp_out_of_tolerance');
    expect(await inbox()).toHaveLength(0);
  });

  it('3b: a Stripe timestamp is read as the SDK reads it: a second or spaced t= cannot hide a future one', async () => {
    const now = Math.floor(Date.now() / 1000);
    const future = now + 7 * 86_400;
    const body = JSON.stringify(stripeEvent({ id: 'evt_s3b' }));
    const v1 = createHmac('sha256', STRIPE_SECRET).update(`${future}.${body}`).digest('hex');
    for (const stamps of [`t=${now},t=${future}`, `t= ${future}`, `t=${future}x`]) {
      const res = await post('stripe-acme', {
        headers: { 'content-type': 'application/json', 'stripe-signature': `${stamps},v1=${v1}` },
        body,
      });
      expect([stamps, res.status, res.body.reason]).toEqual([stamps, 401, 'invalid_timestamp']);
    }
    const plain = await post('stripe-acme', {
      headers: { 'content-type': 'application/json', 'stripe-signature': `t=${future},v1=${v1}` },
      body,
    });
    expect(plain.body.reason).toBe('timestamp_out_of_tolerance');
    expect(await inbox()).toHaveLength(0);
  });

  it('a body signed over bytes that are not UTF-8 is 400 malformed_json, never stored as other text', async () => {
    const body = Buffer.concat([Buffer.from('{"ref":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const signature = `sha256=${createHmac('sha256', GITHUB_SECRET).update(body).digest('hex')}`;
    const headers = {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
      'x-github-delivery': 'd-utf8',
      'x-github-event': 'push',
    };
    // fetch, not supertest: superagent re-encodes a Buffer sent as application/json.
    const res = await fetch(`${t.url}/webhooks/github-acme`, { method: 'POST', headers, body: new Uint8Array(body) });
    expect([res.status, ((await res.json()) as { reason: string }).reason]).toEqual([400, 'malformed_json']);
    expect(await inbox()).toHaveLength(0);
  });

  it('4: the exact signed request twice: both 200, one row, deliveries = 2', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_s4' }), STRIPE_SECRET);
    const first = await post('stripe-acme', signed);
    const second = await post('stripe-acme', signed);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.body.status).toBe('accepted');
    expect(second.body).toEqual({ status: 'duplicate', eventId: 'evt_s4' });
    const rows = await inbox();
    expect(rows).toHaveLength(1);
    expect(rows[0].deliveries).toBe(2);
  });

  it('5: a Stripe retry with a fresh timestamp and signature, and a GitHub redelivery, are one row each', async () => {
    const event = stripeEvent({ id: 'evt_s5' });
    const now = Math.floor(Date.now() / 1000);
    expect((await post('stripe-acme', signStripe(event, STRIPE_SECRET, now - 120))).body.status).toBe('accepted');
    expect((await post('stripe-acme', signStripe(event, STRIPE_SECRET, now))).body.status).toBe('duplicate');

    const delivery = '72d3162e-cc78-11e3-81ab-4c9367dc0958';
    const gh = signGithub({ ref: 'refs/heads/main' }, GITHUB_SECRET, delivery);
    expect((await post('github-acme', gh)).body).toEqual({ status: 'accepted', eventId: delivery });
    expect((await post('github-acme', gh)).body).toEqual({ status: 'duplicate', eventId: delivery });
    const rows = await inbox();
    expect(rows.map((r) => [r.event_id, r.deliveries])).toEqual([
      ['evt_s5', 2],
      [delivery, 2],
    ]);
    // The namespace is the hook the delivery names, with or without `expect` on the endpoint.
    expect(rows[1].source_scope).toBe('acme:github:123');
  });

  it('7: during rotation both secrets verify and the label says which; after notAfter the old one fails', async () => {
    const res = await post('stripe-acme', signStripe(stripeEvent({ id: 'evt_old' }), STRIPE_OLD_SECRET));
    expect(res.status).toBe(200);
    expect((await inbox())[0].verified_with).toBe('2026-10');

    t.clock.offsetMs = ROTATION_END.getTime() - Date.now() + 1000;
    const nowSeconds = Math.floor(t.clock.now().getTime() / 1000);
    const late = await post('stripe-acme', signStripe(stripeEvent({ id: 'evt_late' }), STRIPE_OLD_SECRET, nowSeconds));
    expect(late.status).toBe(401);
    expect(late.body.reason).toBe('invalid_signature');
    const current = await post('stripe-acme', signStripe(stripeEvent({ id: 'evt_cur' }), STRIPE_SECRET, nowSeconds));
    expect(current.status).toBe(200);
    expect((await inbox()).map((r) => r.verified_with)).toEqual(['2026-10', '2026-11']);
  });

  it('8: only unknown signature versions (v0= / v2,) are 401', async () => {
    const signed = signStripe(stripeEvent(), STRIPE_SECRET);
    const v0 = signed.headers['stripe-signature'].replace('v1=', 'v0=');
    const res = await post('stripe-acme', { ...signed, headers: { ...signed.headers, 'stripe-signature': v0 } });
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('unsupported_signature_version');

    const std = signStandard({ type: 'x' }, STANDARD_SECRET, 'msg_v2');
    std.headers['webhook-signature'] = std.headers['webhook-signature'].replace('v1,', 'v2,');
    const res2 = await post('standard-acme', std);
    expect(res2.status).toBe(401);
    expect(res2.body.reason).toBe('unsupported_signature_version');
    expect(await inbox()).toHaveLength(0);
  });

  it('9: a body over maxBodyBytes is 413, by Content-Length before reading, and mid-stream when chunked', async () => {
    const big = signStripe(stripeEvent({ pad: 'x'.repeat(5000) }), STRIPE_SECRET);
    const res = await post('stripe-acme', big);
    expect(res.status).toBe(413);
    expect(res.body.reason).toBe('body_too_large');

    // Chunked, no Content-Length: cut while streaming, long before the client finishes.
    const http = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${t.url}/webhooks/stripe-acme`, { method: 'POST', headers: big.headers }, (r) => {
        resolve(r.statusCode!);
        r.resume();
      });
      req.on('error', reject);
      req.write('x'.repeat(5000)); // already over the limit
      const keepSending = setInterval(() => req.write('y'.repeat(1000)), 5);
      req.on('close', () => clearInterval(keepSending));
      setTimeout(() => clearInterval(keepSending), 5000).unref();
    });
    expect(status).toBe(413);
    expect(await inbox()).toHaveLength(0);
    // Refused while reading the body, and still counted like every other refusal.
    const metrics = await t.app.get((await import('../../src/observability/metrics.registry')).MetricsRegistry).metrics();
    expect(metrics).toMatch(/webhook_requests_total\{endpoint="stripe-acme",outcome="rejected",reason="body_too_large"\} 2/);
  });

  it('11: the same id with a different payload keeps the first row and counts the conflict', async () => {
    const first = stripeEvent({ id: 'evt_s11' });
    await post('stripe-acme', signStripe(first, STRIPE_SECRET));
    const second = { ...first, data: { object: { id: 'pi_other', amount: 1 } } };
    const res = await post('stripe-acme', signStripe(second, STRIPE_SECRET));
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('duplicate');
    const rows = await inbox();
    expect(rows).toHaveLength(1);
    expect(rows[0].payload).toEqual(first);
    expect(rows[0].digest_conflicts).toBe(1);
    const metrics = await t.app.get((await import('../../src/observability/metrics.registry')).MetricsRegistry).metrics();
    expect(metrics).toMatch(/webhook_digest_conflicts_total\{endpoint="stripe-acme"\} 1/);
  });

  it('12: a verified event of a type the endpoint does not accept is 200 ignored', async () => {
    const res = await post('stripe-acme', signStripe(stripeEvent({ id: 'evt_s12', type: 'customer.created' }), STRIPE_SECRET));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ignored', eventId: 'evt_s12', reason: 'event_type_not_accepted' });
    expect(await inbox()).toEqual([expect.objectContaining({ status: 'ignored', status_reason: 'event_type_not_accepted' })]);
  });

  it('12a: a verified event from another mode than `expect` is 200 ignored, unexpected_source', async () => {
    const res = await post('stripe-acme', signStripe(stripeEvent({ id: 'evt_live', livemode: true }), STRIPE_SECRET));
    expect(res.body).toEqual({ status: 'ignored', eventId: 'evt_live', reason: 'unexpected_source' });
    const [row] = await inbox();
    expect(row).toMatchObject({ status: 'ignored', status_reason: 'unexpected_source', source_scope: 'acme:stripe:platform:live' });
  });

  it('stores the verified source facts with the row (a replay re-checks `expect` on them)', async () => {
    await post('stripe-acme', signStripe(stripeEvent({ id: 'evt_facts', account: 'acct_1' }), STRIPE_SECRET));
    await post('github-acme', signGithub({}, GITHUB_SECRET, 'd-facts'));
    await post('shopify-acme', signShopify({ id: 1 }, SHOPIFY_SECRET, 'e-facts'));
    await post('standard-acme', signStandard({ type: 'invoice.paid' }, STANDARD_SECRET, 'msg_facts'));
    const rows = await inbox();
    expect(Object.fromEntries(rows.map((r) => [r.provider, r.source_facts]))).toEqual({
      stripe: { account: 'acct_1', livemode: false },
      github: { hookId: '123' },
      shopify: { shopDomain: 'acme.myshopify.com' },
      standard: {},
    });
  });

  it('accepts Standard Webhooks signed by the reference library and Shopify webhooks', async () => {
    const std = signStandard({ type: 'invoice.paid', data: {} }, STANDARD_SECRET, 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W');
    expect((await post('standard-acme', std)).body).toEqual({ status: 'accepted', eventId: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W' });
    // The library verifies what it signed, and our verifier agrees with it.
    expect(() => new Webhook(STANDARD_SECRET).verify(std.body, std.headers)).not.toThrow();

    const shop = signShopify({ id: 1 }, SHOPIFY_SECRET, 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043');
    expect((await post('shopify-acme', shop)).body.status).toBe('accepted');
    const rows = await inbox();
    expect(rows.map((r) => [r.provider, r.event_type, r.verified_with])).toEqual([
      ['standard', 'invoice.paid', 'std'],
      ['shopify', 'orders/paid', 'shop'],
    ]);
  });

  describe('bad input: a clear 4xx with a stable reason, nothing written', () => {
    const cases: [string, () => Promise<request.Response>, number, string][] = [
      ['unknown endpoint', () => post('nope', signStripe(stripeEvent(), STRIPE_SECRET)), 404, 'unknown_endpoint'],
      [
        'missing signature',
        () => request(t.url).post('/webhooks/stripe-acme').set('content-type', 'application/json').send('{}'),
        401,
        'missing_signature',
      ],
      ['not JSON after a valid signature', () => post('stripe-acme', signStripe('not json', STRIPE_SECRET)), 400, 'malformed_json'],
      ['no event id', () => post('stripe-acme', signStripe({ type: 'charge.refunded' }, STRIPE_SECRET)), 400, 'missing_event_id'],
      [
        'a null event id',
        () => post('stripe-acme', signStripe({ id: null, type: 'charge.refunded' }, STRIPE_SECRET)),
        400,
        'invalid_event_id',
      ],
      [
        'an event id that is too long',
        () => post('stripe-acme', signStripe(stripeEvent({ id: `evt_${'a'.repeat(300)}` }), STRIPE_SECRET)),
        400,
        'invalid_event_id',
      ],
      [
        'an event id with control characters',
        () => post('stripe-acme', signStripe(stripeEvent({ id: 'evt_\n1' }), STRIPE_SECRET)),
        400,
        'invalid_event_id',
      ],
      ['no event type', () => post('stripe-acme', signStripe({ id: 'evt_nt' }, STRIPE_SECRET)), 400, 'invalid_event_type'],
      ['a JSON array', () => post('stripe-acme', signStripe('[1,2]', STRIPE_SECRET)), 400, 'malformed_json'],
      [
        'a NUL escape jsonb cannot store',
        () => post('stripe-acme', signStripe('{"id":"evt_nul","type":"charge.refunded","x":"a\\u0000b"}', STRIPE_SECRET)),
        400,
        'unsupported_json',
      ],
      [
        'a missing X-GitHub-Delivery',
        () => {
          const gh = signGithub({}, GITHUB_SECRET, 'd1');
          delete gh.headers['x-github-delivery'];
          return post('github-acme', gh);
        },
        400,
        'missing_event_id',
      ],
      ['a GitHub signature with the wrong secret', () => post('github-acme', signGithub({}, 'wrong', 'd2')), 401, 'invalid_signature'],
      [
        'a GitHub sha1-only signature',
        () => {
          const gh = signGithub({}, GITHUB_SECRET, 'd3');
          gh.headers['x-hub-signature-256'] = 'sha1=0123';
          return post('github-acme', gh);
        },
        401,
        'unsupported_signature_version',
      ],
      [
        'a missing X-Shopify-Event-Id',
        () => {
          const s = signShopify({}, SHOPIFY_SECRET, 'e1');
          delete s.headers['x-shopify-event-id'];
          return post('shopify-acme', s);
        },
        400,
        'missing_event_id',
      ],
      [
        'a missing webhook-id',
        () => {
          const s = signStandard({ type: 'x' }, STANDARD_SECRET, 'msg_1');
          delete s.headers['webhook-id'];
          return post('standard-acme', s);
        },
        // The id is signed content: without it nothing can verify, so it is an authentication failure.
        401,
        'missing_event_id',
      ],
      [
        'a Standard Webhooks signature for another id',
        () => {
          const s = signStandard({ type: 'x' }, STANDARD_SECRET, 'msg_1');
          s.headers['webhook-id'] = 'msg_2';
          return post('standard-acme', s);
        },
        401,
        'invalid_signature',
      ],
      [
        'a gzip-encoded body',
        () => {
          const s = signStripe(stripeEvent(), STRIPE_SECRET);
          return post('stripe-acme', { ...s, headers: { ...s.headers, 'content-encoding': 'gzip' } });
        },
        400,
        'unsupported_content_encoding',
      ],
    ];
    it.each(cases)('%s', async (_name, send, status, reason) => {
      const res = await send();
      expect(res.status).toBe(status);
      expect(res.body.reason).toBe(reason);
      expect(await inbox()).toHaveLength(0);
    });
  });

  it('answers a differently cased path like the route it matches, instead of hanging', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_case' }), STRIPE_SECRET);
    const res = await request(t.url).post('/Webhooks/stripe-acme').set(signed.headers).send(signed.body).timeout(5000);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_case' });
  });

  it('matches the webhook route as Express would: trailing slash, query string, escaped id (400 when malformed); other shapes fall through', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_shape' }), STRIPE_SECRET);
    const slash = await request(t.url).post('/webhooks/stripe-acme/?source=test').set(signed.headers).send(signed.body);
    expect(slash.body).toEqual({ status: 'accepted', eventId: 'evt_shape' });
    const escaped = await request(t.url).post('/webhooks/stripe%2Dacme').set(signed.headers).send(signed.body);
    expect(escaped.body).toEqual({ status: 'duplicate', eventId: 'evt_shape' });
    const malformed = await request(t.url).post('/webhooks/%E0%A4%A').set(signed.headers).send(signed.body);
    expect([malformed.status, malformed.body.reason]).toEqual([400, 'bad_request']);
    for (const res of [
      await request(t.url).get('/webhooks/stripe-acme'),
      await request(t.url).post('/webhooks/stripe-acme/extra').set(signed.headers).send(signed.body),
      await request(t.url).post('/webhooks').set(signed.headers).send(signed.body),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ status: 'error', reason: 'not_found' });
    }
    expect(await inbox()).toHaveLength(1);
  });

  it('never logs secrets, signatures or bodies', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_log', data: { object: { secret_marker: 'BODY-MARKER-123' } } }), STRIPE_SECRET);
    await post('stripe-acme', signed);
    await post('stripe-acme', { ...signed, body: signed.body.replace('MARKER', 'MARKEX') });
    const text = t.logs.text();
    for (const secret of [STRIPE_SECRET, STRIPE_OLD_SECRET, GITHUB_SECRET, SHOPIFY_SECRET, STANDARD_SECRET, 'BODY-MARKER', 'BODY-MARKEX']) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toContain(signed.headers['stripe-signature'].split('v1=')[1]);
  });
});
