import { createHmac } from 'node:crypto';
import { signStripe, stripeEvent } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';

// Found by the fault suite (test/faults): the Stripe SDK verifies the body after a
// lossy UTF-8 decode (invalid bytes become U+FFFD, a leading BOM is dropped), so
// bytes that were never signed passed as authentic. DESIGN 4: the signature covers
// the exact raw bytes.
const SECRET = 'whsec_exact_bytes_secret_0123';
const endpoints = [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k', value: SECRET }] }];

/** A Stripe v1 signature over `text` as the SDK checks it: HMAC of `${t}.${text}` in UTF-8. */
function signText(text: string): string {
  const t = Math.floor(Date.now() / 1000);
  return `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.${text}`, 'utf8').digest('hex')}`;
}

describe('Stripe: hostile bytes and headers found by the fault suite', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints }, (started) => ({ db, t } = started));

  // fetch, not supertest: superagent re-encodes a Buffer sent as application/json.
  const post = async (body: Buffer, signature: string) => {
    const res = await fetch(`${t.url}/webhooks/stripe-acme`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      body: new Uint8Array(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const rows = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM webhook_inbox'))[0].n);

  it('invalid UTF-8 bytes signed as their U+FFFD replacement: 401, no row', async () => {
    const json = JSON.stringify(stripeEvent({ id: 'evt_bytes_1', note: 'MARK' }));
    const [before, after] = json.split('MARK');
    const body = Buffer.concat([Buffer.from(before), Buffer.from([0xff]), Buffer.from(after)]);
    const signedText = `${before}\ufffd${after}`; // what a lossy decode of `body` gives
    const res = await post(body, signText(signedText));
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 401, reason: 'invalid_signature' });
    // The same change on another invalid byte would pass too; none may.
    const other = Buffer.concat([Buffer.from(before), Buffer.from([0xfe]), Buffer.from(after)]);
    expect((await post(other, signText(signedText))).status).toBe(401);
    expect(await rows()).toBe(0);
  });

  it('a byte-order mark the signature did not cover: 401, no row', async () => {
    const json = JSON.stringify(stripeEvent({ id: 'evt_bytes_2' }));
    const res = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]), signText(json));
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 401, reason: 'invalid_signature' });
    expect(await rows()).toBe(0);
  });

  // Found by the fault suite: "v1,<hex>" (one byte of a valid header changed) makes the SDK
  // throw a plain Error, which was answered as a verified body that is not JSON.
  it('a signature header the SDK cannot parse is 401, not 400 malformed_json', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_bytes_4' }), SECRET);
    const header = signed.headers['stripe-signature'].replace('v1=', 'v1,');
    const res = await post(Buffer.from(signed.body), header);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 401, reason: 'invalid_signature' });
    expect(await rows()).toBe(0);
  });

  it('a genuinely signed thin event (v2.core.event) is 400 unsupported_event, not 401, and writes nothing', async () => {
    const body = JSON.stringify({ id: 'evt_thin_1', object: 'v2.core.event', type: 'v1.billing.meter.error_report_triggered' });
    const res = await post(Buffer.from(body), signText(body));
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 400, reason: 'unsupported_event' });
    expect(await rows()).toBe(0);
  });

  it('non-ASCII UTF-8 text (é, emoji) is still accepted', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_bytes_3', note: 'café ☕ 🚀' }), SECRET);
    const res = await post(Buffer.from(signed.body, 'utf8'), signed.headers['stripe-signature']);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'accepted', eventId: 'evt_bytes_3' } });
    expect(await rows()).toBe(1);
  });
});
