import request from 'supertest';
import { createDataSource, runMigrations } from '../../src/database/data-source';
import { IdentityTimeKeys1765650000000 } from '../../migrations/1765650000000-identity-time-keys';
import { signGithub, signStandard, signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, useTestApp, VIEWER_TOKEN } from '../support/test-app';

/**
 * Identity keys led by the sender's stated time (migration 1765650000000, IdentityKeys): a
 * resend is a duplicate on a new install, across the upgrade of a populated inbox, across the
 * switch, and on an instance that has not seen the switch yet.
 */
const STRIPE_SECRET = 'whsec_identity_keys_secret_0123';
const GITHUB_SECRET = 'github-identity-keys-secret-0123';
const STANDARD_SECRET = `whsec_${Buffer.from('standard-identity-keys-0123').toString('base64')}`;
const SCOPE = 'acme:stripe:platform:test';

const endpoints = [
  { id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 's', value: STRIPE_SECRET }] },
  { id: 'github-acme', provider: 'github', tenantId: 'acme', secrets: [{ label: 'gh', value: GITHUB_SECRET }] },
  { id: 'standard-acme', provider: 'standard', tenantId: 'acme', secrets: [{ label: 'std', value: STANDARD_SECRET }] },
];

/** A Stripe delivery of `event`: each call signs afresh, as Stripe's retries do. */
function postStripe(t: TestApp, event: Record<string, unknown>) {
  const signed = signStripe(event, STRIPE_SECRET);
  return request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);
}

const rowsOf = (db: TestDatabase, eventId: string) =>
  db.query<{ identity_at: Date | null; deliveries: number }>(
    'SELECT identity_at, deliveries FROM webhook_inbox WHERE event_id = $1 ORDER BY id',
    [eventId],
  );

/** The schema before migration 1765650000000, holding one settled event `eventId` an older version accepted. */
function schemaBeforeTimeKeys(eventId: string): string {
  return `
    DELETE FROM schema_migrations WHERE name = 'IdentityTimeKeys1765650000000';
    DROP TABLE webhook_inbox_time_keys;
    DROP INDEX webhook_inbox_identity_time;
    ALTER TABLE webhook_inbox DROP COLUMN identity_at;
    ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_identity UNIQUE (source_scope, event_id);
    INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload, payload_sha256,
                               verified_with, status, completed_at)
    VALUES ('${SCOPE}', '${eventId}', 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded', '{}', repeat('0', 64),
            's', 'done', now())`;
}

describe('identity keys on a new install: led by the stated time', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ endpoints }, (started) => ({ db, t } = started));

  it('keys by time from -infinity, and the id-only constraint is gone', async () => {
    const res = await request(t.url).get('/admin/identity-keys').set('Authorization', `Bearer ${VIEWER_TOKEN}`);
    expect(res.body).toEqual({ keyedFrom: '-infinity', oldConstraint: false });
  });

  it("a Stripe resend (fresh signature) is a duplicate of the row keyed by the event's created", async () => {
    const event = stripeEvent({ id: 'evt_keyed', created: 1_790_000_000 });
    expect((await postStripe(t, event)).body.status).toBe('accepted');
    expect((await postStripe(t, event)).body.status).toBe('duplicate');
    expect(await rowsOf(db, 'evt_keyed')).toEqual([{ identity_at: new Date(1_790_000_000_000), deliveries: 2 }]);
  });

  it('50 parallel copies of one event are one row', async () => {
    const event = stripeEvent({ id: 'evt_parallel' });
    const answers = await Promise.all(Array.from({ length: 50 }, () => postStripe(t, event)));
    expect(answers.filter((a) => a.body.status === 'accepted')).toHaveLength(1);
    expect(answers.filter((a) => a.body.status === 'duplicate')).toHaveLength(49);
    expect(await rowsOf(db, 'evt_parallel')).toHaveLength(1);
  });

  it('GitHub: a version-1 delivery id is keyed by its time, any other by the id alone; redeliveries are duplicates', async () => {
    for (const delivery of ['72d3162e-cc78-11e3-81ab-4c9367dc0958', 'c4642f98-8d01-44da-b075-8e6c6a4c17c2']) {
      for (const expected of ['accepted', 'duplicate']) {
        const signed = signGithub({ zen: 'hi' }, GITHUB_SECRET, delivery);
        const res = await request(t.url).post('/webhooks/github-acme').set(signed.headers).send(signed.body);
        expect(res.body.status).toBe(expected);
      }
    }
    expect((await rowsOf(db, '72d3162e-cc78-11e3-81ab-4c9367dc0958'))[0].identity_at).toEqual(new Date('2014-04-25T12:52:24.582Z'));
    expect((await rowsOf(db, 'c4642f98-8d01-44da-b075-8e6c6a4c17c2'))[0].identity_at).toBeNull();
  });

  it('a sender that states no time (Standard Webhooks) keeps id-only keys: its retry is a duplicate', async () => {
    for (const [at, expected] of [
      [new Date(), 'accepted'],
      [new Date(Date.now() + 1000), 'duplicate'],
    ] as const) {
      const signed = signStandard({ type: 'ping' }, STANDARD_SECRET, 'msg_keys_1', at);
      const res = await request(t.url).post('/webhooks/standard-acme').set(signed.headers).send(signed.body);
      expect(res.body.status).toBe(expected);
    }
    expect(await rowsOf(db, 'msg_keys_1')).toEqual([{ identity_at: null, deliveries: 2 }]);
  });
});

describe('identity keys across the upgrade of a populated inbox, and the switch', () => {
  let db: TestDatabase;
  let first: TestApp;
  let second: TestApp | undefined;
  const legacy = stripeEvent({ id: 'evt_legacy', created: Math.floor(Date.now() / 1000) - 3600 });

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query(schemaBeforeTimeKeys('evt_legacy'));
    first = await startTestApp({ endpoints, databaseUrl: db.url });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await db?.drop();
  });

  it('the migration leaves a populated inbox on id-only keys: a resend of the old event is a duplicate, new rows are NULL-keyed', async () => {
    const mode = await request(first.url).get('/admin/identity-keys').set('Authorization', `Bearer ${VIEWER_TOKEN}`);
    expect(mode.body).toEqual({ keyedFrom: null, oldConstraint: true });
    expect((await postStripe(first, legacy)).body.status).toBe('duplicate');
    const before = stripeEvent({ id: 'evt_before_switch' });
    expect((await postStripe(first, before)).body.status).toBe('accepted');
    expect(await rowsOf(db, 'evt_before_switch')).toEqual([{ identity_at: null, deliveries: 1 }]);
  });

  it('the switch: operators only, audited; then every event accepted before it is still a duplicate', async () => {
    // An instance that read the id-only mode before the switch and keeps it cached.
    second = await startTestApp({ endpoints, databaseUrl: db.url });
    expect((await postStripe(second, stripeEvent({ id: 'evt_second_warm' }))).body.status).toBe('accepted');

    // Stated hours ahead of the database's clock (the sender's clock ahead), accepted before the switch.
    const ahead = stripeEvent({ id: 'evt_stated_ahead', created: Math.floor(Date.now() / 1000) + 6 * 3600 });
    expect((await postStripe(first, ahead)).body.status).toBe('accepted');

    const viewer = await request(first.url)
      .post('/admin/identity-keys/time')
      .set('Authorization', `Bearer ${VIEWER_TOKEN}`)
      .send({ reason: 'upgrade done' });
    expect(viewer.status).toBe(403);
    const res = await request(first.url)
      .post('/admin/identity-keys/time')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ reason: 'upgrade done' });
    expect(res.status).toBe(200);
    expect(res.body.oldConstraintDropped).toBe(true);
    const keyedFrom = new Date(res.body.keyedFrom).getTime();
    expect(keyedFrom).toBeGreaterThan(Date.now() + 23 * 3600_000);
    expect(await db.query(`SELECT action, reason FROM admin_audit WHERE action = 'inbox.time_keys'`)).toEqual([
      { action: 'inbox.time_keys', reason: 'upgrade done' },
    ]);

    // Stated before keyedFrom: NULL keys, the same as the rows written before the switch.
    expect((await postStripe(first, legacy)).body.status).toBe('duplicate');
    expect((await postStripe(first, stripeEvent({ id: 'evt_before_switch' }))).body.status).toBe('duplicate');
    expect((await postStripe(first, ahead)).body.status).toBe('duplicate');
    expect(await rowsOf(db, 'evt_stated_ahead')).toEqual([{ identity_at: null, deliveries: 2 }]);
    // The instance still holding the id-only mode finds its conflict target gone, reads the mode again, nothing lost.
    expect((await postStripe(second, legacy)).body.status).toBe('duplicate');
    const late = stripeEvent({ id: 'evt_second_after' });
    expect((await postStripe(second, late)).body.status).toBe('accepted');
    expect((await postStripe(first, late)).body.status).toBe('duplicate');
    expect(await rowsOf(db, 'evt_legacy')).toEqual([{ identity_at: null, deliveries: 4 }]);
  });

  it('an event stated after keyedFrom is keyed by its time, and its resends on either instance are duplicates', async () => {
    const created = Math.floor(Date.now() / 1000) + 25 * 3600;
    const event = stripeEvent({ id: 'evt_after_switch', created });
    const answers = await Promise.all([postStripe(first, event), postStripe(second!, event), postStripe(first, event)]);
    expect(answers.map((a) => a.body.status).sort()).toEqual(['accepted', 'duplicate', 'duplicate']);
    expect(await rowsOf(db, 'evt_after_switch')).toEqual([{ identity_at: new Date(created * 1000), deliveries: 3 }]);
  });

  it('a second switch changes nothing', async () => {
    const [{ keyed_from: before }] = await db.query('SELECT keyed_from FROM webhook_inbox_time_keys');
    const res = await request(first.url)
      .post('/admin/identity-keys/time')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ reason: 'again' });
    expect(res.status).toBe(200);
    expect(new Date(res.body.keyedFrom)).toEqual(before);
  });

  it("the migration's down puts the id-only constraint back (its index built concurrently) on the populated inbox", async () => {
    await second?.close();
    await first?.close();
    second = undefined;
    const dataSource = createDataSource(db.url, 2);
    await dataSource.initialize();
    try {
      const runner = dataSource.createQueryRunner();
      await new IdentityTimeKeys1765650000000().down(runner);
      await runner.release();
      expect(await db.query(`SELECT contype FROM pg_constraint WHERE conname = 'webhook_inbox_identity'`)).toEqual([{ contype: 'u' }]);
      expect(await db.query(`SELECT to_regclass('webhook_inbox_time_keys') AS t`)).toEqual([{ t: null }]);
      await db.query(`DELETE FROM schema_migrations WHERE name = 'IdentityTimeKeys1765650000000'`);
      // And forward again: a populated inbox stays on id-only keys until the switch.
      await runMigrations(dataSource);
    } finally {
      await dataSource.destroy();
    }
    expect(await db.query(`SELECT count(*)::int AS n FROM pg_constraint WHERE conname = 'webhook_inbox_identity'`)).toEqual([{ n: 1 }]);
  });
});

describe('identity keys: an upgraded inbox that retention emptied', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('is not a new install: the migration keeps the id-only constraint (instances of the previous version still insert against it)', async () => {
    // Its last row deleted by retention.
    await db.query(`${schemaBeforeTimeKeys('evt_gone')}; DELETE FROM webhook_inbox`);
    const dataSource = createDataSource(db.url, 2);
    await dataSource.initialize();
    try {
      await runMigrations(dataSource);
    } finally {
      await dataSource.destroy();
    }
    expect(await db.query(`SELECT count(*)::int AS n FROM pg_constraint WHERE conname = 'webhook_inbox_identity'`)).toEqual([{ n: 1 }]);
    expect(await db.query(`SELECT keyed_from FROM webhook_inbox_time_keys`)).toEqual([]);
  });
});
