import { createHmac } from 'node:crypto';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { signRequest } from '../../src/cli/sign-request';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { paddleAccepts, linearAccepts } from '../support/sender-sdks';

const { webhooks: stripeWebhooks } = Stripe as unknown as { webhooks: Stripe.Webhooks };

/**
 * Real senders' documented schemes, described to provider "hmac" by
 * configuration alone. Each is checked against the sender's own code or
 * published example (named per sender), not only against signatures computed here.
 */
interface Sender {
  name: string;
  secret: string;
  settings: Record<string, unknown>;
  toleranceSeconds?: number;
  expect?: Record<string, string>;
  /** The event as the sender would send it. */
  event(id: string): Record<string, unknown>;
  /** Headers for `body` signed at `at`, the id being `id` where it travels in a header. */
  sign(body: string, at: Date, id: string): Record<string, string>;
  /** The sender's own code accepts what `sign` produced (an official signer or verifier), where it has one. */
  officially?: (body: string, headers: Record<string, string>, secret: string) => Promise<boolean> | boolean;
  /** The same request without its event id. */
  withoutId(id: string, at: Date): { body: string; headers: Record<string, string> };
  missingIdStatus: 400 | 401;
  eventType: string;
}

const seconds = (at: Date) => String(Math.floor(at.getTime() / 1000));
const hmacHex = (algorithm: string, key: string | Buffer, text: string) => createHmac(algorithm, key).update(text).digest('hex');

const stripe: Sender = {
  name: 'Stripe (official SDK signer)',
  secret: 'whsec_stripe_by_configuration',
  settings: {
    signature: { header: 'Stripe-Signature', separator: ',', pairs: { signature: 'v1', timestamp: 't' } },
    signed: { template: '{timestamp}.{body}' },
    timestamp: { inSignature: true },
    eventId: { pointer: '/id' },
    eventType: { pointer: '/type' },
  },
  expect: { '/livemode': 'false' },
  event: (id) => ({ id, object: 'event', type: 'invoice.paid', livemode: false, data: { object: { id: 'in_1' } } }),
  // generateTestHeaderString is the stripe package's own signer.
  sign: (body, at) => ({
    'stripe-signature': stripeWebhooks.generateTestHeaderString({ payload: body, secret: stripe.secret, timestamp: Number(seconds(at)) }),
  }),
  withoutId(_, at) {
    const body = JSON.stringify({ object: 'event', type: 'invoice.paid', livemode: false, data: {} });
    return { body, headers: this.sign(body, at, '') };
  },
  missingIdStatus: 400,
  eventType: 'invoice.paid',
};

const standard: Sender = {
  name: 'Standard Webhooks / Svix (reference library signer)',
  secret: `whsec_${Buffer.from('standard-webhooks-by-configuration').toString('base64')}`,
  settings: {
    secret: { encoding: 'base64', prefix: 'whsec_' },
    signature: { header: 'webhook-signature', encoding: 'base64', separator: ' ', prefix: 'v1,' },
    signed: { template: '{id}.{timestamp}.{body}' },
    timestamp: { header: 'webhook-timestamp' },
    eventId: { header: 'webhook-id' },
    eventType: { pointer: '/type' },
  },
  event: () => ({ type: 'email.delivered', data: { email_id: 'e_1' } }),
  // The standardwebhooks package's Webhook#sign, plus a second (rotated-out) signature in the same header.
  sign: (body, at, id) => ({
    'webhook-id': id,
    'webhook-timestamp': seconds(at),
    'webhook-signature': `v1,${Buffer.from('an old signature').toString('base64')} ${new Webhook(standard.secret).sign(id, at, body)}`,
  }),
  withoutId(id, at) {
    const body = JSON.stringify(this.event(id));
    const { 'webhook-id': _, ...headers } = this.sign(body, at, id);
    return { body, headers };
  },
  // The id is signed: without it nothing can be verified.
  missingIdStatus: 401,
  eventType: 'email.delivered',
};

const slack: Sender = {
  name: "Slack (signer checked against Slack's published example)",
  secret: 'slack-by-configuration',
  settings: {
    signature: { header: 'X-Slack-Signature', prefix: 'v0=' },
    signed: { template: 'v0:{timestamp}:{body}' },
    timestamp: { header: 'X-Slack-Request-Timestamp' },
    eventId: { pointer: '/event_id' },
    eventType: { pointer: '/event/type' },
  },
  expect: { '/api_app_id': 'A0APP' },
  event: (id) => ({ type: 'event_callback', api_app_id: 'A0APP', team_id: 'T0', event_id: id, event: { type: 'message', text: 'hi' } }),
  sign: (body, at) => signRequest('slack', slack.secret, body, { at }).headers,
  withoutId(_, at) {
    const body = JSON.stringify({ type: 'event_callback', api_app_id: 'A0APP', event: { type: 'message' } });
    return { body, headers: this.sign(body, at, '') };
  },
  missingIdStatus: 400,
  eventType: 'message',
};

const paddle: Sender = {
  name: 'Paddle Billing (official SDK verifier)',
  secret: 'pdl_ntfset_01hbydwyyq3bgrj4mgts4arpqc_by/config+uration',
  settings: {
    signature: { header: 'Paddle-Signature', separator: ';', pairs: { signature: 'h1', timestamp: 'ts' } },
    signed: { template: '{timestamp}:{body}' },
    timestamp: { inSignature: true },
    eventId: { pointer: '/event_id' },
    eventType: { pointer: '/event_type' },
  },
  event: (id) => ({
    event_id: id,
    event_type: 'transaction.completed',
    occurred_at: new Date().toISOString(),
    notification_id: 'ntf_1',
    data: { id: 'txn_1' },
  }),
  sign: (body, at) => ({ 'paddle-signature': `ts=${seconds(at)};h1=${hmacHex('sha256', paddle.secret, `${seconds(at)}:${body}`)}` }),
  officially: (body, headers, secret) => paddleAccepts(body, headers['paddle-signature'], secret),
  withoutId(_, at) {
    const body = JSON.stringify({ event_type: 'transaction.completed', data: {} });
    return { body, headers: this.sign(body, at, '') };
  },
  missingIdStatus: 400,
  eventType: 'transaction.completed',
};

const linear: Sender = {
  name: 'Linear (official SDK verifier)',
  secret: 'lin_wh_by_configuration',
  toleranceSeconds: 60,
  settings: {
    signature: { header: 'Linear-Signature' },
    timestamp: { pointer: '/webhookTimestamp', format: 'unix-milliseconds' },
    // Linear puts the delivery id in an unsigned header only: allowed because the file says so.
    eventId: { header: 'Linear-Delivery', unsigned: true },
    eventType: { pointer: '/type' },
  },
  // The body carries its own time, so each test's event is built for its moment.
  event: (id) => ({ action: 'create', type: 'Issue', data: { id: `issue-${id}` }, webhookId: 'wh_1', organizationId: 'org_1' }),
  sign: (body, _at, id) => ({ 'linear-signature': hmacHex('sha256', linear.secret, body), 'linear-delivery': id, 'linear-event': 'Issue' }),
  officially: (body, headers, secret) => linearAccepts(body, headers['linear-signature'], secret),
  withoutId(id, at) {
    const body = JSON.stringify({ ...this.event(id), webhookTimestamp: at.getTime() });
    const { 'linear-delivery': _, ...headers } = this.sign(body, at, id);
    return { body, headers };
  },
  missingIdStatus: 400,
  eventType: 'Issue',
};

const SENDERS = [stripe, standard, slack, paddle, linear];

/** The body a sender sends at `at`: Linear stamps its body with the time. */
function bodyOf(sender: Sender, id: string, at: Date): string {
  const event = sender.event(id);
  return JSON.stringify(sender === linear ? { ...event, webhookTimestamp: at.getTime() } : event);
}

describe('provider "hmac": five real senders by configuration alone, through the real route', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        ...SENDERS.map((s, i) => ({
          id: `sender-${i}`,
          provider: 'hmac',
          tenantId: 'acme',
          secrets: [{ label: 'current', value: s.secret }],
          toleranceSeconds: s.toleranceSeconds ?? 300,
          expect: s.expect,
          settings: s.settings,
        })),
        {
          id: 'github-example',
          provider: 'hmac',
          tenantId: 'acme',
          secrets: [{ label: 'docs', value: "It's a Secret to Everybody" }],
          settings: {
            signature: { header: 'X-Hub-Signature-256', prefix: 'sha256=' },
            eventId: { header: 'X-GitHub-Delivery', unsigned: true },
            eventType: { header: 'X-GitHub-Event', unsigned: true },
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });
  beforeEach(() => db.query('TRUNCATE webhook_inbox'));

  const post = (endpoint: string, body: string, headers: Record<string, string>) =>
    request(t.url)
      .post(`/webhooks/${endpoint}`)
      .set({ 'content-type': 'application/json', ...headers })
      .send(body);
  const rows = () => db.query('SELECT event_id, event_type, verified_with, status FROM webhook_inbox ORDER BY id');

  describe.each(SENDERS.map((s, i) => [s.name, s, `sender-${i}`] as const))('%s', (_, sender, endpoint) => {
    it('valid: accepted with its id and type; a retry is a duplicate', async () => {
      const at = new Date();
      const body = bodyOf(sender, `${endpoint}-evt-1`, at);
      const headers = sender.sign(body, at, `${endpoint}-evt-1`);
      if (sender.officially) expect(await sender.officially(body, headers, sender.secret)).toBe(true);
      expect((await post(endpoint, body, headers)).body).toEqual({ status: 'accepted', eventId: `${endpoint}-evt-1` });
      expect((await post(endpoint, body, headers)).body.status).toBe('duplicate');
      expect(await rows()).toEqual([
        { event_id: `${endpoint}-evt-1`, event_type: sender.eventType, verified_with: 'current', status: 'pending' },
      ]);
    });

    it('tampered: a changed body is 401 invalid_signature, nothing written', async () => {
      const at = new Date();
      const body = bodyOf(sender, `${endpoint}-evt-2`, at);
      const headers = sender.sign(body, at, `${endpoint}-evt-2`);
      const res = await post(endpoint, `${body.slice(0, -1)},"amount":1}`, headers);
      expect([res.status, res.body.reason]).toEqual([401, 'invalid_signature']);
      expect(await rows()).toEqual([]);
    });

    it('stale: correctly signed but outside the tolerance is 401, nothing written', async () => {
      const at = new Date(Date.now() - ((sender.toleranceSeconds ?? 300) + 5) * 1000);
      const body = bodyOf(sender, `${endpoint}-evt-4`, at);
      const res = await post(endpoint, body, sender.sign(body, at, `${endpoint}-evt-4`));
      expect([res.status, res.body.reason]).toEqual([401, 'timestamp_out_of_tolerance']);
      expect(await rows()).toEqual([]);
    });

    it('missing id: refused with missing_event_id, nothing written', async () => {
      const { body, headers } = sender.withoutId(`${endpoint}-evt-5`, new Date());
      const res = await post(endpoint, body, headers);
      expect([res.status, res.body.reason]).toEqual([sender.missingIdStatus, 'missing_event_id']);
      expect(await rows()).toEqual([]);
    });
  });

  it('expect on a JSON pointer: a verified event from another app is acknowledged and ignored', async () => {
    const at = new Date();
    const body = JSON.stringify({ ...slack.event('Ev-other'), api_app_id: 'A0OTHER' });
    const res = await post(`sender-${SENDERS.indexOf(slack)}`, body, slack.sign(body, at, ''));
    expect(res.body).toEqual({ status: 'ignored', eventId: 'Ev-other', reason: 'unexpected_source' });
  });

  it("GitHub's published example verifies by configuration (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries)", async () => {
    // The documented vector signs the text "Hello, World!": verified, then refused as not JSON; one byte off is not verified.
    const headers = {
      'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
      'x-github-delivery': 'd-1',
      'x-github-event': 'push',
    };
    const verified = await post('github-example', 'Hello, World!', headers);
    const changed = await post('github-example', 'Hello, World?', headers);
    expect([verified.status, verified.body.reason]).toEqual([400, 'malformed_json']);
    expect([changed.status, changed.body.reason]).toEqual([401, 'invalid_signature']);
  });
});
