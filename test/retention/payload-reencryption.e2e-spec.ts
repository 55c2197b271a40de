import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import request from 'supertest';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { PayloadReencryptionService } from '../../src/retention/payload-reencryption.service';
import { RetentionService } from '../../src/retention/retention.service';
import { runTsChild } from '../support/child-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { ageInbox, createOrder, ENDPOINTS, paymentIntentEvent, postStripe, STORED_PAYLOADS } from '../inbox/worker-fixtures';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const K1 = key('k1');
const K2 = key('k2');
const K3 = key('k3');
const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/** Key rotation: new rows under the new key, old ones moved in the background, every status, crash, retention. */
describe('payload key rotation and re-encryption', () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  /** event id -> the event as sent. */
  const sent = new Map<string, Record<string, unknown>>();

  const start = async (keys?: string) => {
    await t?.close();
    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: keys ? { PAYLOAD_KEYS: keys } : {} });
    return t;
  };
  const post = async (orderId: string) => {
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId });
    await postStripe(t!, event);
    sent.set(event.id as string, event);
    return event.id as string;
  };
  const keysOf = async () =>
    (
      await db.query(
        `SELECT coalesce(payload_key_id, 'clear') AS k, count(*)::int AS n FROM ${STORED_PAYLOADS} WHERE has_payload GROUP BY 1 ORDER BY 1`,
      )
    ).map((r) => `${r.k}:${r.n}`);
  /** Every stored payload opens through the operator's view and is the event that was sent. */
  const everyPayloadOpens = async () => {
    for (const row of await db.query(`SELECT id, event_id FROM ${STORED_PAYLOADS} WHERE has_payload`)) {
      const view = await request(t!.url).get(`/admin/inbox/${row.id}`).set(op);
      expect({ id: row.event_id, payload: view.body.payload }).toEqual({ id: row.event_id, payload: sent.get(row.event_id) });
    }
  };

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('rows in every status move to the new key (clear rows too); new rows use it; the old key may then go', async () => {
    await start();
    await post('clear-1'); // written before encryption was on
    await start(K1);
    const ids: Record<string, string> = {};
    for (const status of ['pending', 'processing', 'done', 'ignored', 'quarantined']) ids[status] = await post(`rot-${status}`);
    await db.query(
      `UPDATE webhook_inbox SET status = 'processing', locked_by = 'elsewhere:1', locked_until = now() + interval '1 hour' WHERE event_id = $1`,
      [ids.processing],
    );
    await db.query(`UPDATE webhook_inbox SET status = 'done', completed_at = now() WHERE event_id = $1`, [ids.done]);
    await db.query(`UPDATE webhook_inbox SET status = 'ignored', status_reason = 'no_handler', completed_at = now() WHERE event_id = $1`, [
      ids.ignored,
    ]);
    await db.query(
      `UPDATE webhook_inbox SET status = 'quarantined', status_reason = 'operator', completed_at = now() WHERE event_id = $1`,
      [ids.quarantined],
    );
    expect(await keysOf()).toEqual(['clear:1', 'k1:5']);

    await start(`${K2},${K1}`);
    await post('rot-new');
    expect(await keysOf()).toEqual(['clear:1', 'k1:5', 'k2:1']);
    const before = (await request(t!.url).get('/admin/payload-keys').set(op)).body;
    expect(before).toMatchObject({ encrypted: true, current: 'k2', ring: ['k2', 'k1'], reencryption: { remaining: 6, done: false } });
    expect(before.keys).toEqual([
      { keyId: 'k1', rows: 5, current: false, inRing: true },
      { keyId: 'k2', rows: 1, current: true, inRing: true },
      { keyId: null, rows: 1, current: false, inRing: true },
    ]);

    const job = t!.app.get(PayloadReencryptionService);
    job.batchSize = 2;
    expect(await job.runOnce()).toEqual({ resealed: 6, unreadable: 0, capped: false });
    expect(await keysOf()).toEqual(['k2:7']);
    const statuses = await db.query(`SELECT status, count(*)::int AS n FROM webhook_inbox GROUP BY 1 ORDER BY 1`);
    expect(statuses.map((r) => `${r.status}:${r.n}`)).toEqual(['done:1', 'ignored:1', 'pending:3', 'processing:1', 'quarantined:1']);
    await everyPayloadOpens();
    expect((await request(t!.url).get('/admin/payload-keys').set(op)).body.reencryption).toEqual({ remaining: 0, done: true });
    expect((await request(t!.url).get('/metrics')).text).toMatch(/payload_reencryption_rows_total\{outcome="resealed"\} 6/);

    // k1 holds nothing any more: a ring without it starts, and the moved rows are processed.
    await start(K2);
    await createOrder(t!, 'rot-pending', 1000);
    await t!.app.get(InboxWorker).drain();
    expect((await db.query(`SELECT status FROM webhook_inbox WHERE event_id = $1`, [ids.pending]))[0].status).toBe('done');
  });

  it('a process killed mid-batch loses only that batch, which stays readable under its old key; the next run finishes', async () => {
    // 7 rows under k2 from the test above; rotate to k3.
    const child = await runTsChild(join(__dirname, 'reencryption-child.ts'), [db.url, `${K3},${K2}`]);
    expect(child.signal).toBe('SIGKILL');
    expect(child.output).toContain('dying before its commit');
    expect(await keysOf()).toEqual(['k2:4', 'k3:3']);
    // No lock survives the dead session; every row opens under its own key.
    await start(`${K3},${K2}`);
    await everyPayloadOpens();
    expect(await t!.app.get(PayloadReencryptionService).runOnce()).toMatchObject({ resealed: 4, unreadable: 0 });
    expect(await keysOf()).toEqual(['k3:7']);
    await everyPayloadOpens();
  });

  it('retention purges sealed payloads of settled events like clear ones; open work keeps them', async () => {
    await ageInbox(db, 9);
    await t!.app.get(RetentionService).runOnce();
    const rows = await db.query(
      `SELECT status, payload_sealed IS NULL AS purged, payload_key_id FROM ${STORED_PAYLOADS} ORDER BY status, purged`,
    );
    const settled = rows.filter((r) => r.status === 'done' || r.status === 'ignored');
    expect(settled.length).toBeGreaterThan(0);
    for (const r of settled) expect(r).toMatchObject({ purged: true, payload_key_id: null });
    for (const r of rows.filter((r) => r.status === 'quarantined' || r.status === 'processing'))
      expect(r).toMatchObject({ purged: false, payload_key_id: 'k3' });
    const [done] = await db.query(`SELECT id FROM webhook_inbox WHERE status = 'done' LIMIT 1`);
    expect((await request(t!.url).get(`/admin/inbox/${done.id}`).set(op)).body).toMatchObject({
      payloadPurged: true,
      payload: null,
      payloadKeyId: null,
    });
  });
});
