import { Injectable, Module } from '@nestjs/common';
import request from 'supertest';
import { UnitOfWork } from '../../src/database/unit-of-work';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { HandlerOutcome, InboxEvent } from '../../src/inbox/inbox.types';
import { OnWebhookEvent } from '../../src/inbox/on-webhook-event.decorator';
import { signStripe, stripeEventOf } from '../support/signers';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';

/**
 * The "newer wins" recipe of docs/extending.md, with a table of the handler's own
 * (names no team would use, so a module of yours never collides with this test):
 * the provider's time, a tie-break, the first-insert race, one statement under the
 * row's lock. Whatever order and however often the events come, the newest stays.
 */
@Injectable()
class MembershipHandlers {
  @OnWebhookEvent('stripe', 'test_only.membership.updated', { reads: ['created', 'data.object.id', 'data.object.status'] })
  async updated(event: InboxEvent, tx: UnitOfWork): Promise<HandlerOutcome> {
    const { id, status } = event.payload.data.object;
    const values = [event.tenantId, id, status, event.payload.created, event.eventId];
    // The first insert races: whoever loses it still applies through the conditional update below.
    await tx.query(
      `INSERT INTO test_memberships (tenant_id, id, status, changed_at, event_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
      values,
    );
    // Newer by the provider's second, then by event id (Stripe's `created` ties within a second).
    await tx.query(
      `UPDATE test_memberships SET status = $3, changed_at = $4, event_id = $5
        WHERE tenant_id = $1 AND id = $2 AND (changed_at, event_id) < ($4::bigint, $5::text)`,
      values,
    );
    return { kind: 'done' };
  }
}

@Module({ providers: [MembershipHandlers] })
class MembershipsModule {}

const SECRET = 'whsec_newer_wins_0123456789';

describe('newer wins, as docs/extending.md writes it', () => {
  let db: TestDatabase;
  let t: TestApp;
  const endpoints = [{ id: 'stripe-subs', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }];
  useTestApp({ endpoints, imports: [MembershipsModule] }, (started) => ({ db, t } = started));

  beforeAll(async () => {
    await db.query(`CREATE TABLE test_memberships (tenant_id text, id text, status text NOT NULL, changed_at bigint NOT NULL, event_id text NOT NULL,
                    PRIMARY KEY (tenant_id, id))`);
  });

  const post = async (event: Record<string, unknown>) => {
    const signed = signStripe(event, SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-subs').set(signed.headers).send(signed.body)).status).toBe(200);
  };
  const update = (id: string, created: number, status: string) =>
    stripeEventOf('test_only.membership.updated', { id: 'mem_1', object: 'membership', status }, { id, created });

  it('keeps the newest state whatever the order, ties broken by event id, repeats changing nothing', async () => {
    const trialing = update('evt_a1', 1_790_000_100, 'trialing');
    const active = update('evt_a2', 1_790_000_200, 'active');
    const pastDue = update('evt_b2', 1_790_000_200, 'past_due'); // the same second as `active`: the larger id wins
    // Newest first, the oldest last, in separate transactions and then in one batch.
    await post(pastDue);
    await t.app.get(InboxWorker).drain();
    for (const e of [trialing, active]) await post(e);
    await t.app.get(InboxWorker).drain();
    expect(await db.query('SELECT status, changed_at::int AS at, event_id FROM test_memberships')).toEqual([
      { status: 'past_due', at: 1_790_000_200, event_id: 'evt_b2' },
    ]);
    // A resend of an older event is a duplicate at the door; its replay changes nothing either.
    const [row] = await db.query(`SELECT id FROM webhook_inbox WHERE event_id = 'evt_a1'`);
    await db.query(`UPDATE webhook_inbox SET status = 'pending', next_attempt_at = now() WHERE id = $1`, [row.id]);
    await t.app.get(InboxWorker).drain();
    expect((await db.query('SELECT status FROM test_memberships'))[0].status).toBe('past_due');
  });
});
