import request from 'supertest';
import { signRequest } from '../../src/cli/sign-request';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';

const SECRET = 'slack-signing-secret-for-tests';

// Slack's own example, verbatim (https://api.slack.com/authentication/verifying-requests-from-slack):
// a slash command's form body, so it verifies and is then refused as not JSON.
const SLACK_EXAMPLE = {
  secret: '8f742231b10e8888abcd99yyyzzz85a5',
  timestamp: '1531420618',
  body: 'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
  signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
};

const endpoints = [
  {
    id: 'slack-acme',
    provider: 'slack',
    tenantId: 'acme',
    secrets: [{ label: 'app', value: SECRET }],
    expect: { apiAppId: 'A0APP', teamId: 'T0TEAM' },
  },
  { id: 'slack-example', provider: 'slack', tenantId: 'acme', secrets: [{ label: 'doc', value: SLACK_EXAMPLE.secret }] },
];

function eventCallback(eventId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    token: 'legacy',
    team_id: 'T0TEAM',
    api_app_id: 'A0APP',
    event: { type: 'app_mention', user: 'U1', text: 'hi', ts: '1700000000.000100' },
    type: 'event_callback',
    event_id: eventId,
    event_time: 1700000000,
    ...overrides,
  };
}

describe('Slack provider and verified handshakes', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints }, (started) => ({ db, t } = started));
  beforeEach(async () => {
    await db.query('TRUNCATE webhook_inbox');
    t.clock.offsetMs = 0;
  });

  const sign = (payload: object, at = t.clock.now(), secret = SECRET) => signRequest('slack', secret, JSON.stringify(payload), { at });
  const post = (signed: { headers: Record<string, string>; body: string }, endpoint = 'slack-acme') =>
    request(t.url).post(`/webhooks/${endpoint}`).set(signed.headers).send(signed.body);
  const rows = () => db.query('SELECT event_id, event_type, status, status_reason, verified_with FROM webhook_inbox ORDER BY id');
  const handshakes = async () => {
    const text = (await request(t.url).get('/metrics')).text;
    const line = text
      .split('\n')
      .find((l) => l.startsWith('webhook_requests_total{') && l.includes('endpoint="slack-acme"') && l.includes('outcome="handshake"'));
    return line ? Number(line.split(' ').pop()) : 0;
  };

  it('accepts an Events API callback: event_id and event.type from the signed body; a retry is a duplicate', async () => {
    const signed = sign(eventCallback('Ev01'));
    expect((await post(signed)).body).toEqual({ status: 'accepted', eventId: 'Ev01' });
    expect((await post({ ...signed, headers: { ...signed.headers, 'x-slack-retry-num': '1' } })).body).toEqual({
      status: 'duplicate',
      eventId: 'Ev01',
    });
    expect(await rows()).toEqual([
      { event_id: 'Ev01', event_type: 'app_mention', status: 'pending', status_reason: null, verified_with: 'app' },
    ]);
  });

  it('answers a signed url_verification with its challenge, stores nothing and counts a handshake', async () => {
    const before = await handshakes();
    const res = await post(
      sign({ token: 'legacy', challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    expect(await rows()).toEqual([]);
    expect(await handshakes()).toBe(before + 1);
  });

  it('an unsigned, wrongly signed or stale url_verification is a 401 that echoes nothing', async () => {
    const challenge = 'secret-looking-challenge-value';
    const body = JSON.stringify({ token: 'legacy', challenge, type: 'url_verification' });
    const before = await handshakes();
    const unsigned = await request(t.url).post('/webhooks/slack-acme').set('content-type', 'application/json').send(body);
    const forged = await post(signRequest('slack', 'not-the-secret', body));
    const stale = await post(sign(JSON.parse(body), new Date(Date.now() - 301_000)));
    for (const [res, reason] of [
      [unsigned, 'missing_signature'],
      [forged, 'invalid_signature'],
      [stale, 'timestamp_out_of_tolerance'],
    ] as const) {
      expect(res.status).toBe(401);
      expect(res.body.reason).toBe(reason);
      expect(res.text).not.toContain(challenge);
    }
    expect(await rows()).toEqual([]);
    expect(await handshakes()).toBe(before);
  });

  it('records app_rate_limited once per app and minute', async () => {
    const notice = { token: 'legacy', type: 'app_rate_limited', team_id: 'T0TEAM', minute_rate_limited: 1518467820, api_app_id: 'A0APP' };
    expect((await post(sign(notice))).body).toEqual({ status: 'accepted', eventId: 'app_rate_limited:1518467820' });
    expect((await post(sign(notice))).body.status).toBe('duplicate');
    expect(await rows()).toEqual([expect.objectContaining({ event_id: 'app_rate_limited:1518467820', event_type: 'app_rate_limited' })]);
  });

  it('expect on apiAppId and teamId: another app or workspace is acknowledged and ignored', async () => {
    expect((await post(sign(eventCallback('Ev02', { api_app_id: 'A0OTHER' })))).body).toMatchObject({
      status: 'ignored',
      reason: 'unexpected_source',
    });
    expect((await post(sign(eventCallback('Ev03', { team_id: 'T0OTHER' })))).body).toMatchObject({
      status: 'ignored',
      reason: 'unexpected_source',
    });
    expect((await rows()).map((r) => r.status_reason)).toEqual(['unexpected_source', 'unexpected_source']);
  });

  it('tampered, stale, without a timestamp or without event_id: refused, nothing written', async () => {
    const signed = sign(eventCallback('Ev04'));
    const tampered = await post({ ...signed, body: signed.body.replace('hi', 'ho') });
    const stale = await post(sign(eventCallback('Ev05'), new Date(Date.now() - 301_000)));
    const { 'x-slack-request-timestamp': _, ...noTimestamp } = signed.headers;
    const untimed = await post({ ...signed, headers: noTimestamp });
    const { event_id: __, ...withoutId } = eventCallback('x');
    const missingId = await post(sign(withoutId));
    expect([tampered.status, tampered.body.reason]).toEqual([401, 'invalid_signature']);
    expect([stale.status, stale.body.reason]).toEqual([401, 'timestamp_out_of_tolerance']);
    expect([untimed.status, untimed.body.reason]).toEqual([401, 'invalid_timestamp']);
    expect([missingId.status, missingId.body.reason]).toEqual([400, 'missing_event_id']);
    expect(await rows()).toEqual([]);
  });

  it("Slack's published example verifies (then is refused as a form body, not an event); one byte changed does not", async () => {
    t.clock.offsetMs = Number(SLACK_EXAMPLE.timestamp) * 1000 - Date.now();
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': SLACK_EXAMPLE.timestamp,
      'x-slack-signature': SLACK_EXAMPLE.signature,
    };
    const verified = await request(t.url).post('/webhooks/slack-example').set(headers).send(SLACK_EXAMPLE.body);
    const changed = await request(t.url).post('/webhooks/slack-example').set(headers).send(SLACK_EXAMPLE.body.replace('foobar', 'foobaz'));
    expect([verified.status, verified.body.reason]).toEqual([400, 'malformed_json']);
    expect([changed.status, changed.body.reason]).toEqual([401, 'invalid_signature']);
  });
});
