import { Module } from '@nestjs/common';
import request from 'supertest';
import { EndpointConfig } from '../../src/config/app-config';
import { UnauthorizedError } from '../../src/common/errors';
import { SecretForm } from '../../src/ingestion/secret-form';
import {
  header,
  parseJsonObject,
  requireIdentifier,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../src/ingestion/webhook-provider';
import { hmacSha256, requireRecent, signingSecret } from '../../src/providers/hmac-signature';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';

/** The worked example of docs/extending.md ("Adding a webhook provider"), as written there. */
@WebhookProviderFor('acme')
class AcmeProvider implements WebhookProvider {
  readonly expects = {};

  secretForm(): SecretForm {
    return { encoding: 'utf8' }; // the whole text is the HMAC key
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent {
    const value = header(request.headers, 'acme-signature');
    const match = value && /^ts=(\d+);h1=([0-9a-f]{64})$/.exec(value);
    if (!match) throw new UnauthorizedError('missing_signature', 'Acme-Signature is missing or malformed');
    const [, ts, hex] = match;

    // 401 invalid_signature unless a live secret signed `<ts>:<body>`; then 401 unless `ts` is recent.
    const secret = signingSecret(endpoint, now, [Buffer.from(hex, 'hex')], (s) => hmacSha256(s.value, ts, ':', request.rawBody));
    requireRecent(Number(ts) * 1000, endpoint, now, 'the Acme-Signature timestamp');

    const body = parseJsonObject(request.rawBody);
    return {
      eventId: requireIdentifier(body.event_id, 'invalid_event_id'),
      eventType: requireIdentifier(body.event_type, 'invalid_event_type'),
      namespace: `endpoint-${endpoint.id}`,
      verifiedWith: secret.label,
      source: {},
    };
  }
}

@Module({ providers: [AcmeProvider] })
class AcmeModule {}

const SECRET = 'acme-signing-secret-0123456789';

describe('a provider of your own, as docs/extending.md writes it: a folder and one module in AppModule', () => {
  let db: TestDatabase;
  let t: TestApp;
  const endpoints = [{ id: 'acme-hooks', provider: 'acme', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }];
  useTestApp({ endpoints, imports: [AcmeModule] }, (started) => ({ db, t } = started));

  const post = (body: string, ts: number, secret = SECRET) =>
    request(t.url)
      .post('/webhooks/acme-hooks')
      .set({
        'content-type': 'application/json',
        'acme-signature': `ts=${ts};h1=${hmacSha256(secret, String(ts), ':', body).toString('hex')}`,
      })
      .send(body);
  const now = () => Math.floor(t.clock.now().getTime() / 1000);

  it('accepts a signed event once, and refuses a forged, a stale and an unsigned one without writing', async () => {
    const body = JSON.stringify({ event_id: 'ev_1', event_type: 'thing.happened' });
    expect((await post(body, now())).body).toMatchObject({ status: 'accepted', eventId: 'ev_1' }); // the worker marks it ignored: no handler
    expect((await post(body, now())).body).toMatchObject({ status: 'duplicate' });
    expect((await post(JSON.stringify({ event_id: 'ev_2', event_type: 'x' }), now(), 'another-secret-0123456789')).body.reason).toBe(
      'invalid_signature',
    );
    expect((await post(JSON.stringify({ event_id: 'ev_3', event_type: 'x' }), now() - 3600)).body.reason).toBe(
      'timestamp_out_of_tolerance',
    );
    const unsigned = await request(t.url).post('/webhooks/acme-hooks').set('content-type', 'application/json').send(body);
    expect([unsigned.status, unsigned.body.reason]).toEqual([401, 'missing_signature']);
    expect(await db.query('SELECT event_id FROM webhook_inbox')).toEqual([{ event_id: 'ev_1' }]);
  });
});
