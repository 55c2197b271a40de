import request from 'supertest';
import { createHmac } from 'node:crypto';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp } from '../support/test-app';

/**
 * Provider "sender" configurations that started although they let a captured (or absent)
 * signature authorise other content, or failed every request: the start now refuses each,
 * naming the setting. Each test failed before its check.
 */
const KEY = 'start-check-secret-0123456789abcdef';
const secrets = [{ label: 'current', value: KEY }];
const hmacHex = (text: string) => createHmac('sha256', KEY).update(text).digest('hex');

describe('provider "sender": the start refuses what would read more than is verified', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const start = (id: string, settings: Record<string, unknown>) =>
    startTestApp({ databaseUrl: db.url, endpoints: [{ id, provider: 'sender', tenantId: 'acme', secrets, settings }] });
  const hmacEndpoint = { key: { type: 'hmac' }, signature: { header: 'x-sig', encoding: 'hex' } };

  it('a body nothing signs, with a {digest} id: refused unless unsignedBody (one signature of the URL admitted any body)', async () => {
    await expect(
      start('digest-id', {
        ...hmacEndpoint,
        signed: '{url}',
        publicUrl: 'https://hooks.example.com/webhooks/digest-id',
        eventId: '{digest}',
        eventType: 'event',
      }),
    ).rejects.toThrow(
      /settings\.signed: covers no part of the body[^]*settings\.eventId: \{digest\} reads the whole body, which is not signed/,
    );
  });

  it('{query:NAME} in an id: refused (one signed body was stored again under every fresh query value)', async () => {
    await expect(start('query-id', { ...hmacEndpoint, eventId: '{/id}-{query:delivery}', eventType: '{/type}' })).rejects.toThrow(
      'settings.eventId: {query:delivery} is never signed; it may be used in handshake replies only',
    );
  });

  it('{hmac-hex:/p} over an unsigned field: refused (the handshake reply signed any event the request chose)', async () => {
    await expect(
      start('oracle', {
        ...hmacEndpoint,
        timestamp: { header: 'x-ts' },
        signed: '{timestamp}.{/id}',
        unsignedBody: true,
        eventId: '{/id}',
        eventType: 'event',
        handshakes: [{ when: { pointer: '/event', equals: 'url_validation' }, reply: { json: { token: '{hmac-hex:/plainToken}' } } }],
      }),
    ).rejects.toThrow('settings.handshakes.0.reply: {hmac-hex:/plainToken} may only HMAC a signed field');
  });

  it('items: a timestamp and id read at the top of the body must be signed there (a stale item was replayed under a fresh time and id)', async () => {
    await expect(
      start('items-root', {
        key: { type: 'hmac' },
        items: { pointer: '/items' },
        signature: { pointer: '/sig', encoding: 'hex' },
        signed: '{/ts}.{/id}',
        timestamp: { pointer: '/ts' },
        eventId: '{/id}',
        eventType: 'event',
      }),
    ).rejects.toThrow(/settings\.timestamp\.pointer: the field is not signed[^]*settings\.eventId: \/id is not signed/);
  });

  it("items: a timestamp named through an item is every item's (a stale signed item appended to a fresh one was accepted)", async () => {
    const t = await start('items-each-ts', {
      key: { type: 'hmac' },
      items: { pointer: '/items' },
      signature: { pointer: '/sig', encoding: 'hex' },
      signed: '{/ts}.{/id}',
      unsignedBody: true,
      timestamp: { pointer: '/items/0/ts' },
      eventId: '{/items/0/id}',
      eventType: 'event',
    });
    try {
      const item = (id: string, ts: number) => ({ id, ts: String(ts), sig: hmacHex(`${ts}.${id}`) });
      const now = Math.floor(Date.now() / 1000);
      const post = (items: unknown[]) =>
        request(t.url).post('/webhooks/items-each-ts').set('content-type', 'application/json').send(JSON.stringify({ items }));
      const stale = await post([item('fresh', now), item('captured-yesterday', now - 86_400)]);
      expect([stale.status, stale.body.reason]).toEqual([401, 'timestamp_out_of_tolerance']);
      expect(await db.query(`SELECT event_id FROM webhook_inbox WHERE endpoint_id = 'items-each-ts'`)).toEqual([]);
      const ok = await post([item('fresh', now), item('also-fresh', now - 5)]);
      expect([ok.status, ok.body]).toEqual([200, { status: 'accepted', eventId: 'fresh' }]);
    } finally {
      await t.close();
    }
  });

  it('{setting:constructor}: refused at start (it found the inherited constructor, and every request was a 500)', async () => {
    await expect(
      start('setting-proto', { ...hmacEndpoint, signed: '{setting:constructor}{body}', eventId: '{/id}', eventType: 'event' }),
    ).rejects.toThrow('settings.values.constructor: used in settings.signed but not set');
  });

  it('{header:constructor} signed: a request without it is 401 missing_signed_header, not a 500', async () => {
    const t = await start('header-proto', { ...hmacEndpoint, signed: '{header:constructor}{body}', eventId: '{/id}', eventType: 'event' });
    try {
      const body = JSON.stringify({ id: 'e1' });
      const res = await request(t.url)
        .post('/webhooks/header-proto')
        .set({ 'content-type': 'application/json', 'x-sig': hmacHex(body) })
        .send(body);
      expect([res.status, res.body.reason]).toEqual([401, 'missing_signed_header']);
      expect(await db.query(`SELECT event_id FROM webhook_inbox WHERE endpoint_id = 'header-proto'`)).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
