import { Signature as HubSpotSignature } from '@hubspot/api-client';
import { hmacValidator as AdyenHmacValidator } from '@adyen/api-library';
import { EventWebhook } from '@sendgrid/eventwebhook';
import { verifyKey as discordVerifyKey } from 'discord-interactions';
import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { globalAgent } from 'node:https';
import { crc32 } from 'node:zlib';
import { WebhooksHelper as SquareWebhooksHelper } from 'square';
import request from 'supertest';
import twilio from 'twilio';
import { signSnsMessage, startFakeCertificateHost, FakeCertificateHost } from '../support/fake-certificate-host';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const SnsMessageValidator = require('sns-validator') as new (hostPattern?: RegExp) => {
  validate(message: object, cb: (error: Error | null) => void): void;
};

/**
 * Every built-in preset of provider "sender" (config/senders/), each through the
 * real route with a request signed by the sender's own library where one exists
 * (shown to that library first where it has a verifier), else by its documented
 * algorithm: valid, one byte tampered, stale (where the scheme has a timestamp),
 * missing id; and its handshakes.
 */
interface Delivery {
  body: string;
  headers: Record<string, string>;
  contentType?: string;
}

interface Preset {
  preset: string;
  /** What the request is signed with (docs/operations.md lists the same). */
  signedBy: string;
  secrets: { label: string; value: string }[];
  settings?: Record<string, unknown>;
  deliver(at: Date, n: string): Delivery;
  officially?(d: Delivery): boolean | Promise<boolean>;
  eventId(n: string, d: Delivery): string;
  eventType: string;
  stale: boolean;
  withoutId(at: Date, n: string): Delivery;
  missingIdStatus?: 400 | 401;
  /** The sender's expected answer to an event, when not the JSON result. */
  answer?: { status: 200 | 204; text?: string };
}

const seconds = (at: Date) => String(Math.floor(at.getTime() / 1000));
const hmac = (hash: string, key: string | Buffer, text: string, encoding: 'hex' | 'base64' = 'hex') =>
  createHmac(hash, key).update(text).digest(encoding);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const batchId = (ids: string[]) => `batch-${sha256([...ids].sort().join('\n'))}`;
const json = (value: unknown) => JSON.stringify(value);

// Twilio: the official library computes the signature (and validates it).
const TWILIO_TOKEN = 'twilio-auth-token-0123456789abcdef';
const TWILIO_URL = 'https://hooks.example.com/webhooks/twilio?tenant=acme';
const twilioParams = (n: string, withId = true) => ({
  ...(withId ? { MessageSid: `SM${n}` } : {}),
  AccountSid: 'AC0001',
  MessageStatus: 'delivered',
  SmsStatus: 'delivered',
  To: '+15550001',
  From: '+15550002',
  Body: 'MARK hello & goodbye',
});
const twilioDelivery = (params: Record<string, string>): Delivery => ({
  body: new URLSearchParams(params).toString(),
  headers: { 'x-twilio-signature': twilio.getExpectedTwilioSignature(TWILIO_TOKEN, TWILIO_URL, params) },
  contentType: 'application/x-www-form-urlencoded',
});

// SendGrid: a P-256 key pair; the official library verifies.
const sendgridKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const SENDGRID_PUBLIC = sendgridKeys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const sendgridEvents = (n: string, withId = true) => [
  { email: 'a@example.com', event: 'delivered', ...(withId ? { sg_event_id: `sg-${n}-a` } : {}), sg_message_id: 'MARK', timestamp: 1 },
  { email: 'a@example.com', event: 'open', sg_event_id: `sg-${n}-b`, sg_message_id: 'm1', timestamp: 2 },
];
const sendgridDelivery = (at: Date, body: string): Delivery => ({
  body,
  headers: {
    'x-twilio-email-event-webhook-timestamp': seconds(at),
    'x-twilio-email-event-webhook-signature': sign('sha256', Buffer.from(seconds(at) + body), sendgridKeys.privateKey).toString('base64'),
  },
});

// Discord: an Ed25519 key pair; the official library verifies.
const discordKeys = generateKeyPairSync('ed25519');
const DISCORD_PUBLIC = discordKeys.publicKey.export({ type: 'spki', format: 'der' }).subarray(-32).toString('hex');
const discordDelivery = (at: Date, body: string): Delivery => ({
  body,
  headers: {
    'x-signature-timestamp': seconds(at),
    'x-signature-ed25519': sign(null, Buffer.from(seconds(at) + body), discordKeys.privateKey).toString('hex'),
  },
});
const discordEvent = (n: string, withTimestamp = true) =>
  json({
    version: 1,
    application_id: '1234560123453231555',
    type: 1,
    event: {
      type: 'APPLICATION_AUTHORIZED',
      ...(withTimestamp ? { timestamp: `2024-10-18T14:42:53.${n.padStart(6, '0')}` } : {}),
      data: { user: { id: n, username: 'MARK' } },
    },
  });

const ZOOM_SECRET = 'zoom-secret-token-0123456789';
const zoomDelivery = (at: Date, body: string): Delivery => ({
  body,
  headers: { 'x-zm-request-timestamp': seconds(at), 'x-zm-signature': `v0=${hmac('sha256', ZOOM_SECRET, `v0:${seconds(at)}:${body}`)}` },
});

const MAILGUN_KEY = 'mailgun-signing-key-0123456789';
const mailgunBody = (at: Date, n: string, withId = true) => {
  const token = `MARK${n}${'t'.repeat(40)}`;
  return json({
    signature: { timestamp: seconds(at), token, signature: hmac('sha256', MAILGUN_KEY, seconds(at) + token) },
    'event-data': { ...(withId ? { id: `mg-${n}` } : {}), event: 'delivered', timestamp: at.getTime() / 1000 },
  });
};

const SQUARE_KEY = 'square-signature-key-0123456789';
const SQUARE_URL = 'https://hooks.example.com/webhooks/square';
const squareDelivery = (body: string): Delivery => ({
  body,
  headers: { 'x-square-hmacsha256-signature': hmac('sha256', SQUARE_KEY, SQUARE_URL + body, 'base64') },
});

// PayPal and SNS: the certificate host is a local HTTPS server (started in beforeAll).
let certificates: FakeCertificateHost;
const PAYPAL_WEBHOOK_ID = 'WH-TEST-0001';
const paypalDelivery = (at: Date, n: string, body: string): Delivery => {
  const transmissionId = `tx-${n}`;
  const time = at.toISOString();
  const signed = `${transmissionId}|${time}|${PAYPAL_WEBHOOK_ID}|${crc32(Buffer.from(body))}`;
  return {
    body,
    headers: {
      'paypal-transmission-id': transmissionId,
      'paypal-transmission-time': time,
      'paypal-cert-url': `${certificates.url}/v1/notifications/certs/CERT-360caa42`,
      'paypal-auth-algo': 'SHA256withRSA',
      'paypal-transmission-sig': sign('sha256', Buffer.from(signed), certificates.privateKey).toString('base64'),
    },
  };
};

const snsMessage = (at: Date, n: string, fields: Record<string, string> = {}) =>
  signSnsMessage(
    {
      Type: 'Notification',
      MessageId: `sns-${n}`,
      TopicArn: 'arn:aws:sns:us-east-1:123456789012:orders',
      Subject: 'order',
      Message: 'MARK {"order":1}',
      Timestamp: at.toISOString(),
      SignatureVersion: '2',
      SigningCertURL: `${certificates.url}/SimpleNotificationService-0001.pem`,
      UnsubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe',
      ...fields,
    },
    certificates.privateKey,
  );
const snsDelivery = (message: Record<string, string>): Delivery => ({
  body: json(message),
  headers: { 'x-amz-sns-message-type': message.Type },
  contentType: 'text/plain; charset=UTF-8',
});

// Adyen: the official library computes each item's HMAC (and validates it). The key is Adyen's documented example.
const ADYEN_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const adyen = new AdyenHmacValidator();
const adyenItem = (n: string, withId = true) => {
  const item: Record<string, unknown> = {
    additionalData: {},
    amount: { currency: 'EUR', value: 1130 },
    eventCode: 'AUTHORISATION',
    eventDate: '2024-01-01T01:00:00+01:00',
    merchantAccountCode: 'TestMerchant',
    merchantReference: 'MARK-ref',
    ...(withId ? { pspReference: `psp${n}` } : {}),
    reason: '',
    success: 'true',
  };
  (item.additionalData as Record<string, string>).hmacSignature = adyen.calculateHmac(item as never, ADYEN_KEY);
  return item;
};
const adyenBody = (n: string, withId = true) =>
  json({ live: 'false', notificationItems: [{ NotificationRequestItem: adyenItem(n, withId) }] });

const INTERCOM_SECRET = 'intercom-client-secret-0123456789';
const intercomDelivery = (body: string): Delivery => ({
  body,
  headers: { 'x-hub-signature': `sha1=${hmac('sha1', INTERCOM_SECRET, body)}` },
});

// HubSpot: the official client's own signature function computes v3.
const HUBSPOT_SECRET = 'hubspot-client-secret-0123456789';
const HUBSPOT_URL = 'https://hooks.example.com/webhooks/hubspot';
const hubspotDelivery = (at: Date, body: string): Delivery => ({
  body,
  headers: {
    'x-hubspot-request-timestamp': String(at.getTime()),
    'x-hubspot-signature-v3': HubSpotSignature.getSignature('POST', 'v3', {
      signature: '',
      clientSecret: HUBSPOT_SECRET,
      requestBody: body,
      url: HUBSPOT_URL,
      timestamp: at.getTime(),
    }),
  },
});
const hubspotEvents = (n: string, withId = true) =>
  [1, 2].map((i) => ({
    ...(withId || i === 2 ? { eventId: Number(`${n}${i}`) } : {}),
    subscriptionId: 12345,
    portalId: 62515,
    occurredAt: 1564113600000,
    subscriptionType: 'contact.creation',
    attemptNumber: 0,
    objectId: 123,
    changeSource: 'MARK',
  }));

const CALENDLY_KEY = 'calendly-signing-key-0123456789';
const calendlyDelivery = (at: Date, body: string): Delivery => ({
  body,
  headers: { 'calendly-webhook-signature': `t=${seconds(at)},v1=${hmac('sha256', CALENDLY_KEY, `${seconds(at)}.${body}`)}` },
});
const calendlyUri = (n: string) => `https://api.calendly.com/scheduled_events/E1/invitees/${n}`;

const TWITCH_SECRET = 'twitch-eventsub-secret-0123456789';
const twitchDelivery = (at: Date, n: string | undefined, body: string, type = 'notification'): Delivery => {
  const id = n === undefined ? '' : `tw-${n}`;
  // Twitch writes nanoseconds.
  const time = at.toISOString().replace('Z', '123456Z');
  return {
    body,
    headers: {
      ...(n === undefined ? {} : { 'twitch-eventsub-message-id': id }),
      'twitch-eventsub-message-timestamp': time,
      'twitch-eventsub-message-type': type,
      'twitch-eventsub-message-signature': `sha256=${hmac('sha256', TWITCH_SECRET, id + time + body)}`,
    },
  };
};
const twitchSubscription = { id: 's1', type: 'channel.follow', version: '2', status: 'enabled' };

const META_SECRET = 'meta-app-secret-0123456789';
const META_VERIFY_TOKEN = 'meta-verify-token-0123456789';
const metaDelivery = (body: string): Delivery => ({
  body,
  headers: { 'x-hub-signature-256': `sha256=${hmac('sha256', META_SECRET, body)}` },
});
const metaBody = (at: Date, n: string, withId = true) =>
  json({
    object: 'page',
    entry: [
      { ...(withId ? { id: `page-${n}` } : {}), time: Number(seconds(at)), changes: [{ field: 'feed', value: { message: 'MARK' } }] },
    ],
  });

const GRAPH_CLIENT_STATE = 'graph-client-state-MARK-0123456789';
const graphBody = (n: string, withId = true, clientState = GRAPH_CLIENT_STATE) =>
  json({
    value: [
      {
        ...(withId ? { subscriptionId: `sub-${n}` } : {}),
        subscriptionExpirationDateTime: '2030-01-01T00:00:00.0000000Z',
        changeType: 'created',
        resource: 'Users/u1/Messages/m1',
        resourceData: { '@odata.type': '#Microsoft.Graph.Message', id: 'm1' },
        clientState,
        tenantId: 't1',
      },
    ],
  });

const PRESETS: Preset[] = [
  {
    preset: 'twilio',
    signedBy: 'twilio (getExpectedTwilioSignature; validateRequest agrees)',
    secrets: [{ label: 'current', value: TWILIO_TOKEN }],
    settings: { publicUrl: TWILIO_URL },
    deliver: (_, n) => twilioDelivery(twilioParams(n)),
    officially: (d) =>
      twilio.validateRequest(TWILIO_TOKEN, d.headers['x-twilio-signature'], TWILIO_URL, Object.fromEntries(new URLSearchParams(d.body))),
    eventId: (n) => `SM${n}:delivered`,
    eventType: 'message.delivered',
    stale: false,
    withoutId: (_, n) => twilioDelivery(twilioParams(n, false)),
  },
  {
    preset: 'sendgrid',
    signedBy: 'node:crypto ECDSA P-256; @sendgrid/eventwebhook verifySignature agrees',
    secrets: [{ label: 'current', value: SENDGRID_PUBLIC }],
    deliver: (at, n) => sendgridDelivery(at, json(sendgridEvents(n))),
    officially: (d) => {
      const webhook = new EventWebhook();
      const key = webhook.convertPublicKeyToECDSA(SENDGRID_PUBLIC);
      return webhook.verifySignature(
        key,
        d.body,
        d.headers['x-twilio-email-event-webhook-signature'],
        d.headers['x-twilio-email-event-webhook-timestamp'],
      );
    },
    eventId: (n) => batchId([`sg-${n}-a`, `sg-${n}-b`]),
    eventType: 'event_batch',
    stale: true,
    withoutId: (at, n) => sendgridDelivery(at, json(sendgridEvents(n, false))),
  },
  {
    preset: 'discord',
    signedBy: 'node:crypto Ed25519; discord-interactions verifyKey agrees',
    secrets: [{ label: 'current', value: DISCORD_PUBLIC }],
    deliver: (at, n) => discordDelivery(at, discordEvent(n)),
    officially: (d) => discordVerifyKey(d.body, d.headers['x-signature-ed25519'], d.headers['x-signature-timestamp'], DISCORD_PUBLIC),
    eventId: (n, d) => `APPLICATION_AUTHORIZED:2024-10-18T14:42:53.${n.padStart(6, '0')}:${sha256(d.body)}`,
    eventType: 'APPLICATION_AUTHORIZED',
    stale: true,
    withoutId: (at, n) => discordDelivery(at, discordEvent(n, false)),
    answer: { status: 204 },
  },
  {
    preset: 'zoom',
    signedBy: "Zoom's documented algorithm (no SDK verifier)",
    secrets: [{ label: 'current', value: ZOOM_SECRET }],
    deliver: (at, n) =>
      zoomDelivery(
        at,
        json({ event: 'meeting.started', event_ts: Number(n), payload: { account_id: 'A1', object: { id: n, topic: 'MARK' } } }),
      ),
    eventId: (n, d) => `meeting.started:${n}:${sha256(d.body)}`,
    eventType: 'meeting.started',
    stale: true,
    withoutId: (at, n) => zoomDelivery(at, json({ event: 'meeting.started', payload: { account_id: 'A1', object: { id: n } } })),
  },
  {
    preset: 'mailgun',
    signedBy: "Mailgun's documented algorithm (mailgun.js has no verifier)",
    secrets: [{ label: 'current', value: MAILGUN_KEY }],
    deliver: (at, n) => ({ body: mailgunBody(at, n), headers: {} }),
    eventId: (n) => `mg-${n}`,
    eventType: 'delivered',
    stale: true,
    withoutId: (at, n) => ({ body: mailgunBody(at, n, false), headers: {} }),
  },
  {
    preset: 'square',
    signedBy: 'node:crypto HMAC; square WebhooksHelper.verifySignature agrees',
    secrets: [{ label: 'current', value: SQUARE_KEY }],
    settings: { publicUrl: SQUARE_URL },
    deliver: (at, n) =>
      squareDelivery(
        json({ merchant_id: 'M1', type: 'payment.updated', event_id: `sq-${n}`, created_at: at.toISOString(), data: { id: 'MARK' } }),
      ),
    officially: (d) =>
      SquareWebhooksHelper.verifySignature({
        requestBody: d.body,
        signatureHeader: d.headers['x-square-hmacsha256-signature'],
        signatureKey: SQUARE_KEY,
        notificationUrl: SQUARE_URL,
      }),
    eventId: (n) => `sq-${n}`,
    eventType: 'payment.updated',
    stale: false,
    withoutId: () => squareDelivery(json({ merchant_id: 'M1', type: 'payment.updated', data: {} })),
  },
  {
    preset: 'paypal',
    signedBy: "PayPal's documented algorithm, RSA-SHA256 with a certificate served over HTTPS (no SDK verifies locally)",
    secrets: [],
    settings: {
      values: { webhookId: PAYPAL_WEBHOOK_ID },
      key: {
        type: 'rsa',
        hash: 'sha256',
        certificate: { url: { header: 'paypal-cert-url' }, hosts: ['^localhost$'], caFile: '' },
      },
    },
    deliver: (at, n) => paypalDelivery(at, n, json({ id: `WH-${n}`, event_type: 'PAYMENT.CAPTURE.COMPLETED', resource: { id: 'MARK' } })),
    eventId: (n) => `WH-${n}`,
    eventType: 'PAYMENT.CAPTURE.COMPLETED',
    stale: true,
    withoutId: (at, n) => paypalDelivery(at, n, json({ event_type: 'PAYMENT.CAPTURE.COMPLETED', resource: {} })),
  },
  {
    preset: 'aws-sns',
    signedBy: 'node:crypto RSA-SHA256 with a certificate served over HTTPS; sns-validator agrees',
    secrets: [],
    settings: {
      key: {
        type: 'rsa',
        hashBy: { pointer: '/SignatureVersion', values: { '1': 'sha1', '2': 'sha256' } },
        certificate: { url: { pointer: '/SigningCertURL' }, hosts: ['^localhost$'], path: '\\.pem$', caFile: '' },
      },
    },
    deliver: (at, n) => snsDelivery(snsMessage(at, n)),
    officially: async (d) => {
      const saved = globalAgent.options.ca;
      globalAgent.options.ca = certificates.certificatePem;
      try {
        return await new Promise<boolean>((resolve) =>
          new SnsMessageValidator(/^localhost:\d+$/).validate(JSON.parse(d.body), (e) => resolve(!e)),
        );
      } finally {
        if (saved === undefined) delete globalAgent.options.ca;
        else globalAgent.options.ca = saved;
      }
    },
    eventId: (n) => `sns-${n}`,
    eventType: 'Notification',
    stale: true,
    withoutId: (at, n) => {
      const { MessageId: _, ...rest } = snsMessage(at, n);
      return snsDelivery(signSnsMessage(rest, certificates.privateKey)); // signed again without its id
    },
  },
  {
    preset: 'adyen',
    signedBy: '@adyen/api-library hmacValidator.calculateHmac (validateHMAC agrees)',
    secrets: [{ label: 'current', value: ADYEN_KEY }],
    deliver: (_, n) => ({ body: adyenBody(n), headers: {} }),
    officially: (d) => adyen.validateHMAC(JSON.parse(d.body).notificationItems[0].NotificationRequestItem, ADYEN_KEY),
    eventId: (n) => `psp${n}:AUTHORISATION:true`,
    eventType: 'AUTHORISATION',
    stale: false,
    withoutId: (_, n) => ({ body: adyenBody(n, false), headers: {} }),
    answer: { status: 200, text: '[accepted]' },
  },
  {
    preset: 'intercom',
    signedBy: "Intercom's documented algorithm (no SDK verifier)",
    secrets: [{ label: 'current', value: INTERCOM_SECRET }],
    deliver: (at, n) =>
      intercomDelivery(
        json({
          type: 'notification_event',
          id: `notif_${n}`,
          topic: 'conversation.user.created',
          created_at: Number(seconds(at)),
          data: { item: { id: 'MARK' } },
        }),
      ),
    eventId: (n) => `notif_${n}`,
    eventType: 'conversation.user.created',
    stale: false,
    withoutId: () => intercomDelivery(json({ type: 'notification_event', topic: 'conversation.user.created', data: {} })),
  },
  {
    preset: 'hubspot-v3',
    signedBy: '@hubspot/api-client Signature.getSignature v3 (isValid agrees)',
    secrets: [{ label: 'current', value: HUBSPOT_SECRET }],
    settings: { publicUrl: HUBSPOT_URL },
    deliver: (at, n) => hubspotDelivery(at, json(hubspotEvents(n))),
    officially: (d) =>
      HubSpotSignature.isValid({
        signatureVersion: 'v3',
        signature: d.headers['x-hubspot-signature-v3'],
        clientSecret: HUBSPOT_SECRET,
        requestBody: d.body,
        url: HUBSPOT_URL,
        timestamp: Number(d.headers['x-hubspot-request-timestamp']),
      }),
    eventId: (n) => batchId([`${n}1`, `${n}2`]),
    eventType: 'event_batch',
    stale: true,
    withoutId: (at, n) => hubspotDelivery(at, json(hubspotEvents(n, false))),
  },
  {
    preset: 'calendly',
    signedBy: "Calendly's documented algorithm (no SDK verifier)",
    secrets: [{ label: 'current', value: CALENDLY_KEY }],
    deliver: (at, n) =>
      calendlyDelivery(
        at,
        json({ event: 'invitee.created', created_at: at.toISOString(), payload: { uri: calendlyUri(n), name: 'MARK' } }),
      ),
    eventId: (n) => `invitee.created:${calendlyUri(n)}`,
    eventType: 'invitee.created',
    stale: true,
    withoutId: (at) => calendlyDelivery(at, json({ event: 'invitee.created', payload: { name: 'x' } })),
  },
  {
    preset: 'twitch',
    signedBy: "Twitch's documented algorithm (no SDK verifier without a Twitch client)",
    secrets: [{ label: 'current', value: TWITCH_SECRET }],
    deliver: (at, n) => twitchDelivery(at, n, json({ subscription: twitchSubscription, event: { user_name: 'MARK' } })),
    eventId: (n) => `tw-${n}`,
    eventType: 'notification:channel.follow',
    stale: true,
    withoutId: (at) => twitchDelivery(at, undefined, json({ subscription: twitchSubscription, event: {} })),
    // The message id is signed: without it nothing verifies.
    missingIdStatus: 401,
  },
  {
    preset: 'meta',
    signedBy: "Meta's documented algorithm (X-Hub-Signature-256; no SDK verifier)",
    secrets: [
      { label: 'current', value: META_SECRET },
      { label: 'verify-token', value: META_VERIFY_TOKEN },
    ],
    deliver: (at, n) => metaDelivery(metaBody(at, n)),
    eventId: (n, d) => `page:page-${n}:${sha256(d.body)}`,
    eventType: 'page',
    stale: false,
    withoutId: (at, n) => metaDelivery(metaBody(at, n, false)),
  },
  {
    preset: 'microsoft-graph',
    signedBy: "Microsoft Graph's documented notification format (a clientState, not a signature; no SDK verifier)",
    secrets: [{ label: 'current', value: GRAPH_CLIENT_STATE }],
    deliver: (_, n) => ({ body: graphBody(n), headers: {} }),
    eventId: (n, d) => `sub-${n}:${sha256(d.body)}`,
    eventType: 'created',
    stale: false,
    withoutId: (_, n) => ({ body: graphBody(n, false), headers: {} }),
  },
];

const endpointOf = (p: Preset) => `${p.preset}-main`;

describe('provider "sender": the built-in presets, each through the real route', () => {
  let db: TestDatabase;
  let t: TestApp;
  let counter = 100;
  const next = () => String((counter += 1));

  beforeAll(async () => {
    certificates = await startFakeCertificateHost();
    db = await createTestDatabase();
    const withCa = (settings: Record<string, unknown> | undefined) => {
      const key = settings?.key as { certificate?: Record<string, unknown> } | undefined;
      if (key?.certificate) key.certificate.caFile = certificates.caFile;
      return settings;
    };
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        ...PRESETS.map((p) => ({
          id: endpointOf(p),
          provider: 'sender',
          tenantId: 'acme',
          secrets: p.secrets,
          settings: { preset: p.preset, ...withCa(p.settings) },
        })),
        // The preset as shipped: certificates only from sns.<region>.amazonaws.com.
        { id: 'aws-sns-as-shipped', provider: 'sender', tenantId: 'acme', secrets: [], settings: { preset: 'aws-sns' } },
        // The local host allowed, but its self-signed certificate not trusted: TLS refuses it.
        {
          id: 'aws-sns-untrusted-tls',
          provider: 'sender',
          tenantId: 'acme',
          secrets: [],
          settings: {
            preset: 'aws-sns',
            key: {
              type: 'rsa',
              hashBy: { pointer: '/SignatureVersion', values: { '2': 'sha256' } },
              certificate: { url: { pointer: '/SigningCertURL' }, hosts: ['^localhost$'] },
            },
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await certificates?.close();
  });
  beforeEach(() => db.query('TRUNCATE webhook_inbox'));

  const post = (endpoint: string, d: Delivery, path = '') =>
    request(t.url)
      .post(`/webhooks/${endpoint}${path}`)
      .set({ 'content-type': d.contentType ?? 'application/json', ...d.headers })
      .send(d.body);
  const rows = () =>
    db.query(
      `SELECT i.event_id, i.event_type, i.verified_with, p.payload, i.payload_sha256
         FROM webhook_inbox i LEFT JOIN webhook_inbox_payloads p ON p.day = i.payload_day AND p.inbox_id = i.id ORDER BY i.id`,
    );

  describe.each(PRESETS.map((p) => [p.preset, p] as const))('%s', (_, preset) => {
    const endpoint = endpointOf(preset);

    it(`valid: accepted (signed by ${preset.signedBy}); a retry is a duplicate`, async () => {
      const n = next();
      const d = preset.deliver(new Date(), n);
      if (preset.officially) expect(await preset.officially(d)).toBe(true);
      const res = await post(endpoint, d);
      if (preset.answer) {
        expect(res.status).toBe(preset.answer.status);
        expect(res.text).toBe(preset.answer.text ?? '');
      } else expect(res.body).toEqual({ status: 'accepted', eventId: preset.eventId(n, d) });
      const again = await post(endpoint, d);
      if (!preset.answer) expect(again.body.status).toBe('duplicate');
      const stored = await rows();
      expect(stored).toEqual([
        expect.objectContaining({
          event_id: preset.eventId(n, d),
          event_type: preset.eventType,
          verified_with: preset.secrets.length > 0 ? 'current' : 'certificate',
          payload_sha256: sha256(d.body),
        }),
      ]);
    });

    it('tampered: one byte changed is 401 invalid_signature, nothing written', async () => {
      const d = preset.deliver(new Date(), next());
      expect(d.body).toContain('MARK');
      const res = await post(endpoint, { ...d, body: d.body.replace('MARK', 'MARX') });
      expect([res.status, res.body.reason]).toEqual([401, 'invalid_signature']);
      expect(await rows()).toEqual([]);
    });

    (preset.stale ? it : it.skip)('stale: correctly signed outside the tolerance is 401 timestamp_out_of_tolerance', async () => {
      const d = preset.deliver(new Date(Date.now() - 310_000), next());
      const res = await post(endpoint, d);
      expect([res.status, res.body.reason]).toEqual([401, 'timestamp_out_of_tolerance']);
      expect(await rows()).toEqual([]);
    });

    it('missing id: refused with missing_event_id, nothing written', async () => {
      const res = await post(endpoint, preset.withoutId(new Date(), next()));
      expect([res.status, res.body.reason]).toEqual([preset.missingIdStatus ?? 400, 'missing_event_id']);
      expect(await rows()).toEqual([]);
    });
  });

  it('twilio: the form body is stored as its JSON form; the digest stays of the bytes received', async () => {
    const d = twilioDelivery(twilioParams('form'));
    expect((await post('twilio-main', d)).body.status).toBe('accepted');
    const [row] = await rows();
    expect(row.payload).toEqual(twilioParams('form'));
    expect(row.payload_sha256).toBe(sha256(d.body));
  });

  it('zoom: endpoint.url_validation is answered with the HMAC of plainToken, nothing stored', async () => {
    const at = new Date();
    const res = await post(
      'zoom-main',
      zoomDelivery(at, json({ event: 'endpoint.url_validation', payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' }, event_ts: 1 })),
    );
    expect(res.body).toEqual({
      plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
      encryptedToken: hmac('sha256', ZOOM_SECRET, 'qgg8vlvZRS6UYooatFL8Aw'),
    });
    const forged = await post('zoom-main', {
      ...zoomDelivery(at, json({ event: 'endpoint.url_validation', payload: { plainToken: 'x' } })),
      body: json({ event: 'endpoint.url_validation', payload: { plainToken: 'y' } }),
    });
    expect([forged.status, forged.body.reason]).toEqual([401, 'invalid_signature']);
    expect(await rows()).toEqual([]);
  });

  it('discord: a signed PING is answered 204, nothing stored; an unsigned one is 401', async () => {
    const ping = discordDelivery(new Date(), json({ version: 1, application_id: '1', type: 0 }));
    const res = await post('discord-main', ping);
    expect([res.status, res.text]).toEqual([204, '']);
    const forged = await post('discord-main', { ...ping, body: json({ version: 1, application_id: '2', type: 0 }) });
    expect([forged.status, forged.body.reason]).toEqual([401, 'invalid_signature']);
    expect(await rows()).toEqual([]);
  });

  it('twitch: webhook_callback_verification is answered with its challenge as text, nothing stored', async () => {
    const body = json({ challenge: 'pogchamp-kappa-360noscope-vohiyo', subscription: twitchSubscription });
    const res = await post('twitch-main', twitchDelivery(new Date(), next(), body, 'webhook_callback_verification'));
    expect([res.status, res.headers['content-type'], res.text]).toEqual([
      200,
      'text/plain; charset=utf-8',
      'pogchamp-kappa-360noscope-vohiyo',
    ]);
    expect(await rows()).toEqual([]);
  });

  it('meta: the subscription GET is echoed only with the configured verify token; other GETs are refused', async () => {
    const ok = await request(t.url).get(
      `/webhooks/meta-main?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=${META_VERIFY_TOKEN}`,
    );
    expect([ok.status, ok.text, ok.headers['x-content-type-options']]).toEqual([200, '1158201444', 'nosniff']);
    const wrong = await request(t.url).get('/webhooks/meta-main?hub.mode=subscribe&hub.challenge=1&hub.verify_token=guess-guess-guess');
    expect([wrong.status, wrong.body.reason]).toEqual([401, 'invalid_verify_token']);
    const other = await request(t.url).get('/webhooks/meta-main?hello=1');
    expect([other.status, other.body.reason]).toEqual([400, 'invalid_challenge']);
    // An endpoint that expects no GET keeps the app's 404.
    expect((await request(t.url).get('/webhooks/zoom-main?hub.challenge=1')).status).toBe(404);
    expect(await rows()).toEqual([]);
  });

  it('microsoft-graph: the validation POST is echoed as text (spaces and all), nothing stored; a stranger clientState is 401', async () => {
    const token = 'Validation: Testing client application reachability for subscription Request-Id: 25ad3d5f-f1c4-4a86-93f3-4e41a9f2d5e0';
    const res = await request(t.url)
      .post(`/webhooks/microsoft-graph-main?validationToken=${encodeURIComponent(token)}`)
      .set('content-type', 'text/plain')
      .send('');
    expect([res.status, res.headers['content-type'], res.text]).toEqual([200, 'text/plain; charset=utf-8', token]);
    const stranger = await post('microsoft-graph-main', { body: graphBody(next(), true, 'a-guessed-client-state-value'), headers: {} });
    expect([stranger.status, stranger.body.reason]).toEqual([401, 'invalid_signature']);
    expect(await rows()).toEqual([]);
  });

  it('aws-sns: the certificate is fetched once and cached; SignatureVersion 1 (SHA-1) verifies too; as shipped, only AWS hosts are fetched from', async () => {
    const before = certificates.fetches;
    for (const version of ['1', '2']) {
      const res = await post('aws-sns-main', snsDelivery(snsMessage(new Date(), next(), { SignatureVersion: version })));
      expect(res.body.status).toBe('accepted');
    }
    expect(certificates.fetches - before).toBeLessThanOrEqual(1);
    const shipped = await post('aws-sns-as-shipped', snsDelivery(snsMessage(new Date(), next())));
    expect([shipped.status, shipped.body.reason]).toEqual([401, 'untrusted_certificate_url']);
    const foreign = await post('aws-sns-main', snsDelivery(snsMessage(new Date(), next(), { SigningCertURL: 'http://localhost/x.pem' })));
    expect([foreign.status, foreign.body.reason]).toEqual([401, 'untrusted_certificate_url']);
    const untrusted = await post('aws-sns-untrusted-tls', snsDelivery(snsMessage(new Date(), next())));
    expect([untrusted.status, untrusted.body.reason, untrusted.headers['retry-after']]).toEqual([503, 'certificate_unavailable', '30']);
    expect(await rows()).toHaveLength(2);
  });

  it('aws-sns: a SubscriptionConfirmation is stored as an event of that type (its SubscribeURL is signed)', async () => {
    const message = snsMessage(new Date(), next(), {
      Type: 'SubscriptionConfirmation',
      Token: 'token-1',
      SubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=token-1',
    });
    delete (message as Record<string, string | undefined>).Subject;
    const res = await post('aws-sns-main', snsDelivery(signSnsMessage(message, certificates.privateKey)));
    expect(res.body.status).toBe('accepted');
    expect((await rows())[0].event_type).toBe('SubscriptionConfirmation');
  });

  it('adyen: every item must verify; a second item with a bad HMAC refuses the request', async () => {
    const good = adyenItem(next());
    const bad = { ...adyenItem(next()), merchantReference: 'changed' };
    const res = await post('adyen-main', {
      body: json({ live: 'false', notificationItems: [{ NotificationRequestItem: good }, { NotificationRequestItem: bad }] }),
      headers: {},
    });
    expect([res.status, res.body.reason]).toEqual([401, 'invalid_signature']);
    expect(await rows()).toEqual([]);
  });

  it('never logs keys, signatures or bodies', async () => {
    const d = preset('zoom').deliver(new Date(), next());
    await post('zoom-main', { ...d, body: d.body.replace('MARK', 'MARX') });
    const logged = t.logs.lines.join('\n');
    for (const secret of [ZOOM_SECRET, d.headers['x-zm-signature'], 'MARX']) expect(logged).not.toContain(secret);
  });
});

function preset(name: string): Preset {
  return PRESETS.find((p) => p.preset === name)!;
}
