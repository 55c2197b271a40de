import request from 'supertest';
import { OrdersService } from '../../src/orders/orders.service';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { OutboxRepository } from '../../src/outbox/outbox.repository';
import { FakeDestination } from '../support/fake-destinations';
import { OPERATOR_TOKEN, TestApp, useTestAppWithDestinations } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { drain, ENDPOINTS, outboxRows, paymentIntentEvent, postStripe, TENANT } from '../inbox/worker-fixtures';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/**
 * The relay holds entries once it has the claim's answer (or, handed over, once the writer's
 * COMMIT is in). An erasure that commits after the claim (or the writer) did, and whose notice
 * the relay handles before that answer, re-read a held set without the entry: the copy claimed
 * before the erasure went out afterwards, address included. Now entries held after a notice that
 * came since their claim started are re-read. The claim's answer is delayed here as a busy event
 * loop would delay it (the notice arrives on another connection).
 */
describe('erasure: an e-mail claimed before the erasure and held after its notice', () => {
  let db: TestDatabase;
  let t: TestApp;
  let email: FakeDestination;
  useTestAppWithDestinations({ endpoints: ENDPOINTS, env: { ROLES: 'api,relay', RELAY_POLL_MS: '600000' } }, (s) => ({ db, t, email } = s));
  afterEach(() => {
    jest.restoreAllMocks();
    email.reset();
  });

  /** Counts the erasure notices the relay handles. */
  function countNotices(relay: OutboxRelay): () => number {
    let notices = 0;
    const recheck = relay.recheckErasures.bind(relay);
    jest.spyOn(relay, 'recheckErasures').mockImplementation(() => (notices++, recheck()));
    return () => notices;
  }

  /** An order of `<id>@example.com`, paid through the worker: its receipt e-mail is written. */
  async function payOrder(id: string): Promise<void> {
    await t.app.get(OrdersService).create({ tenantId: TENANT, id, totalMinor: 1000, currency: 'eur', customerEmail: `${id}@example.com` });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: id }));
    await drain(t);
  }

  async function emailRow(id: string) {
    const [row] = (await outboxRows(db, id)).filter((r) => r.destination === 'email');
    return row;
  }

  async function eraseAndAwaitNotice(address: string, noticed: () => number): Promise<void> {
    const before = noticed();
    const erased = await request(t.url).post('/admin/erasure').set(op).send({ email: address, reason: 'gdpr' });
    expect([erased.status, erased.body.recipientsBlanked]).toEqual([200, 1]);
    // The notice reached this relay and its re-read (of what it held) answered.
    await waitFor('the erasure notice handled', async () => noticed() > before);
    await new Promise((r) => setTimeout(r, 100));
  }

  it('claimed: is not sent after the erasure answered, and settles dead (erased)', async () => {
    const relay = t.app.get(OutboxRelay);
    const repository = t.app.get(OutboxRepository);
    const notices = countNotices(relay);
    // A backlog: the writer leaves the entries pending for a claim (no hand-over).
    jest.spyOn(relay, 'handOver').mockReturnValue(undefined);
    const claim = repository.claim.bind(repository);
    let erasedDuringClaim = false;
    jest.spyOn(repository, 'claim').mockImplementation(async (...args) => {
      const result = await claim(...args);
      const mine = result.entries.find((e) => e.destination === 'email' && e.operationKey.includes('race-a'));
      if (mine && !erasedDuringClaim) {
        erasedDuringClaim = true;
        // The claim has committed (the row is `delivering` under this lease); the relay has not read its answer yet.
        await eraseAndAwaitNotice('race-a@example.com', notices);
      }
      return result;
    });

    await payOrder('race-a');

    await waitFor('the e-mail settled', async () => {
      const row = await emailRow('race-a');
      return row.status !== 'pending' && row.status !== 'delivering';
    });
    expect(erasedDuringClaim).toBe(true);
    const after = await emailRow('race-a');
    const sentTo = email.requests.map((r) => JSON.parse(r.body).to);
    expect({ status: after.status, last_error: after.last_error, sentTo }).toEqual({ status: 'dead', last_error: 'erased', sentTo: [] });
  });

  it('handed over after the writer committed: is not sent after the erasure answered either', async () => {
    const relay = t.app.get(OutboxRelay);
    const notices = countNotices(relay);
    const handedOver = relay.handedOver.bind(relay);
    let erasedBeforeHandOver = false;
    jest.spyOn(relay, 'handedOver').mockImplementation((handOver, entries) => {
      const mine = entries.find((e) => e.destination === 'email' && e.operationKey.includes('race-b'));
      if (!mine || erasedBeforeHandOver) return handedOver(handOver, entries);
      erasedBeforeHandOver = true;
      // The writer's COMMIT is in (entries `delivering` under the relay's lease); the relay has them a moment later.
      void eraseAndAwaitNotice('race-b@example.com', notices).then(() => handedOver(handOver, entries));
    });

    await payOrder('race-b');

    await waitFor('the e-mail settled', async () => {
      const row = await emailRow('race-b');
      return erasedBeforeHandOver && row.status !== 'pending' && row.status !== 'delivering';
    });
    const after = await emailRow('race-b');
    const sentTo = email.requests.map((r) => JSON.parse(r.body).to);
    expect({ status: after.status, last_error: after.last_error, sentTo }).toEqual({ status: 'dead', last_error: 'erased', sentTo: [] });
  });

  it('handed over to a relay that began stopping meanwhile: handed back settled dead (erased), not pending (last: it stops the relay)', async () => {
    const relay = t.app.get(OutboxRelay);
    const notices = countNotices(relay);
    const handedOver = relay.handedOver.bind(relay);
    let done = false;
    jest.spyOn(relay, 'handedOver').mockImplementation((handOver, entries) => {
      if (done || !entries.some((e) => e.destination === 'email' && e.operationKey.includes('stop-a')))
        return handedOver(handOver, entries);
      done = true;
      // The writer's COMMIT is in; the instance begins shutting down and an erasure commits before the relay has the entries.
      void (async () => {
        await relay.stop();
        await eraseAndAwaitNotice('stop-a@example.com', notices);
        handedOver(handOver, entries);
      })();
    });

    await payOrder('stop-a');
    await waitFor('handed back', async () => done && (await emailRow('stop-a')).status !== 'delivering');
    // Any relay's claim now takes it.
    await relay.runOnce();
    const after = await emailRow('stop-a');
    expect({ status: after.status, last_error: after.last_error, to: after.payload.to, sent: email.requests.length }).toEqual({
      status: 'dead',
      last_error: 'erased',
      to: '',
      sent: 0,
    });
  });
});
