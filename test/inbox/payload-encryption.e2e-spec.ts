import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { signStripe } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import {
  createOrder,
  daySealedOf,
  ENDPOINTS,
  inboxRow,
  orderRow,
  paymentIntentEvent,
  postStripe,
  setDayPayload,
  STRIPE_SECRET,
} from './worker-fixtures';

const K1 = `k1:${randomBytes(32).toString('base64')}`;

describe('payload encryption: sealed rows, tampering, omit', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        ...ENDPOINTS,
        { ...ENDPOINTS[0], id: 'stripe-minimal', tenantId: 'lean', omit: ['data.object.shipping', 'data.object.charges.billing_details'] },
      ],
      env: { PAYLOAD_KEYS: K1, WORKER_MAX_ATTEMPTS: '3' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const view = (id: string, token = OPERATOR_TOKEN) => request(t.url).get(`/admin/inbox/${id}`).set('Authorization', `Bearer ${token}`);

  it('stores the payload sealed under the current key; operators see it, viewers do not', async () => {
    await createOrder(t, 'enc-1', 1000);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'enc-1' });
    await postStripe(t, event);
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ payload: null, payload_key_id: 'k1' });
    expect(row.payload_sealed).toBeInstanceOf(Buffer);
    expect(row.payload_sealed.includes(Buffer.from('enc-1'))).toBe(false);
    expect((await view(row.id)).body).toMatchObject({ payload: event, payloadKeyId: 'k1', payloadPurged: false });
    const viewer = await view(row.id, VIEWER_TOKEN);
    expect(viewer.status).toBe(200);
    expect(viewer.body.payload).toBeUndefined();

    await t.app.get(InboxWorker).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'done' });
    expect(await orderRow(db, 'enc-1')).toMatchObject({ status: 'paid' });
  });

  it('an altered ciphertext is quarantined (payload_decryption_failed), never handed to the handler', async () => {
    await createOrder(t, 'enc-2', 1000);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'enc-2' });
    await postStripe(t, event);
    // Flip one bit in the middle of the ciphertext.
    await setDayPayload(db, event.id as string, `payload_sealed = set_byte(wp.payload_sealed, 20, get_byte(wp.payload_sealed, 20) # 1)`);
    await t.app.get(InboxWorker).runOnce();
    expect(await inboxRow(db, event.id as string)).toMatchObject({ status: 'quarantined', status_reason: 'payload_decryption_failed' });
    expect(await orderRow(db, 'enc-2')).toMatchObject({ status: 'awaiting_payment' });
    const answer = (await view((await inboxRow(db, event.id as string)).id)).body;
    expect(answer).toMatchObject({ payload: null, payloadUnreadable: 'payload_decryption_failed', payloadPurged: false });
  });

  it('a ciphertext moved to another row is quarantined there; the row it came from is processed', async () => {
    await createOrder(t, 'enc-3a', 1000);
    await createOrder(t, 'enc-3b', 1000);
    const a = paymentIntentEvent('payment_intent.succeeded', { orderId: 'enc-3a' });
    const b = paymentIntentEvent('payment_intent.succeeded', { orderId: 'enc-3b' });
    await postStripe(t, a);
    await postStripe(t, b);
    // B gets A's sealed payload (a valid ciphertext under a key the ring holds).
    await setDayPayload(db, b.id as string, `payload_sealed = ${daySealedOf('$2')}`, [a.id]);
    await t.app.get(InboxWorker).runOnce();
    expect(await inboxRow(db, b.id as string)).toMatchObject({ status: 'quarantined', status_reason: 'payload_decryption_failed' });
    expect(await orderRow(db, 'enc-3b')).toMatchObject({ status: 'awaiting_payment' });
    expect(await inboxRow(db, a.id as string)).toMatchObject({ status: 'done' });
    expect(await orderRow(db, 'enc-3a')).toMatchObject({ status: 'paid' });
  });

  it('a row sealed under a key id this ring lacks is retried (another instance may hold it), not quarantined at once', async () => {
    await createOrder(t, 'enc-4', 1000);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'enc-4' });
    await postStripe(t, event);
    await setDayPayload(db, event.id as string, `payload_key_id = 'k9'`);
    await t.app.get(InboxWorker).runOnce();
    const row = await inboxRow(db, event.id as string);
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    expect(row.last_error).toMatch(/payload key "k9" is not in this instance's key ring/);
    // The key id is part of the associated data: relabelling a ciphertext does not make it open either.
    await setDayPayload(db, event.id as string, `payload_key_id = 'k1'`);
    expect((await view(row.id)).body.payload).toMatchObject({ id: event.id });
  });

  it('omit drops the listed paths before storage; the digest stays that of the bytes received', async () => {
    await createOrder(t, 'enc-5', 1000);
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'enc-5' });
    const object = (event.data as any).object;
    object.shipping = { name: 'Ada Lovelace', address: { line1: '12 St James Sq' } };
    object.charges = [{ id: 'ch_1', billing_details: { email: 'ada@example.com' } }];
    const signed = signStripe(event, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    const res = await request(t.url).post('/webhooks/stripe-minimal').set(signed.headers).send(signed.body);
    expect(res.body).toMatchObject({ status: 'accepted' });
    const row = await inboxRow(db, event.id as string);
    expect(row.payload_sha256).toBe(createHash('sha256').update(signed.body).digest('hex'));
    const stored = (await view(row.id)).body.payload;
    expect(stored.data.object.shipping).toBeUndefined();
    expect(stored.data.object.charges).toEqual([{ id: 'ch_1' }]);
    expect(stored.data.object.metadata).toEqual({ order_id: 'enc-5' });
  });
});

describe('payload encryption: what the start refuses', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  async function startError(env: Record<string, string>, endpoints: unknown[] = ENDPOINTS): Promise<string> {
    try {
      const t = await startTestApp({ databaseUrl: db.url, endpoints, env });
      await t.close();
    } catch (error) {
      return (error as Error).message;
    }
    return 'started';
  }

  it('an omit path that overlaps a path the handler or the acceptance reads, in one line', async () => {
    const omit = (paths: string[]) => [{ ...ENDPOINTS[0], omit: paths }];
    expect(await startError({}, omit(['data.object.metadata']))).toBe(
      'WEBHOOK_ENDPOINTS_FILE: endpoint "stripe-acme": omit "data.object.metadata" drops "data.object.metadata.order_id", which StripePaymentHandlers.apply (charge.refunded) reads',
    );
    expect(await startError({}, omit(['account']))).toBe(
      'WEBHOOK_ENDPOINTS_FILE: endpoint "stripe-acme": omit "account" drops "account", which the stripe acceptance check reads',
    );
    expect(await startError({}, omit(['data.object.shipping']))).toBe('started');
    expect(await startError({}, omit(['data..x']))).toMatch(/^WEBHOOK_ENDPOINTS_FILE: .*endpoints\.0\.omit\.0: a JSON path/);
  });

  it('a key ring that cannot open the stored payloads, in one line naming the missing key', async () => {
    const t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { PAYLOAD_KEYS: K1 } });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'start-1' }));
    await t.close();
    const k2 = `k2:${randomBytes(32).toString('base64')}`;
    const refused =
      'stored payloads are sealed with key "k1", which the key ring does not hold: keep every key until GET /admin/payload-keys shows no row under it';
    expect(await startError({ PAYLOAD_KEYS: k2 })).toBe(`PAYLOAD_KEYS: ${refused}`);
    expect(await startError({})).toBe(`PAYLOAD_KEYS (unset): ${refused}`);
    expect(await startError({ PAYLOAD_KEYS: `${k2},${K1}` })).toBe('started');
  });
});
