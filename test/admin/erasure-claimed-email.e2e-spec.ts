import request from 'supertest';
import { OrdersService } from '../../src/orders/orders.service';
import { OutboxRepository } from '../../src/outbox/outbox.repository';
import { FakeDestination } from '../support/fake-destinations';
import { OPERATOR_TOKEN, TestApp, useTestAppWithDestinations } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { drain, ENDPOINTS, outboxRows, paymentIntentEvent, postStripe, TENANT } from '../inbox/worker-fixtures';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/**
 * An erasure while a relay holds the customer's e-mail claimed but not yet sent (waiting for a
 * request slot behind another e-mail). The relay sent the copy it had claimed, address and all,
 * after the erasure had answered. Now the erasure's notice makes every relay re-read the
 * recipients of what it holds unsent: the e-mail is never sent and settles `dead` ('erased').
 */
describe('erasure of an e-mail a relay holds claimed', () => {
  let db: TestDatabase;
  let t: TestApp;
  let email: FakeDestination;
  useTestAppWithDestinations(
    // The relay role, so the writer hands the entries over and the relay listens for erasures; one e-mail at a time.
    { endpoints: ENDPOINTS, env: { ROLES: 'api,relay', RELAY_POLL_MS: '600000', DESTINATION_EMAIL_CONCURRENCY: '1' } },
    (s) => ({ db, t, email } = s),
  );
  afterEach(() => {
    jest.restoreAllMocks();
    email.reset();
  });

  it('is never sent once the erasure answered, and settles dead as erased', async () => {
    const repository = t.app.get(OutboxRepository);
    const reread = repository.erasedAmong.bind(repository);
    const rereads: string[][] = [];
    jest.spyOn(repository, 'erasedAmong').mockImplementation((ids) => (rereads.push(ids), reread(ids)));
    const orders = t.app.get(OrdersService);
    for (const id of ['held-a', 'held-b']) {
      await orders.create({ tenantId: TENANT, id, totalMinor: 1000, currency: 'eur', customerEmail: `${id}@example.com` });
    }
    email.failNext(1, { kind: 'hold' });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'held-a' }));
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'held-b' }));
    await drain(t); // one transaction: its four entries handed over to this instance's relay at once

    await email.waitForRequests(1);
    const first = JSON.parse(email.requests[0].body).to as string;
    const waiting = first === 'held-a@example.com' ? 'held-b' : 'held-a';
    const [queued] = (await outboxRows(db, waiting)).filter((r) => r.destination === 'email');
    expect(queued.status).toBe('delivering'); // claimed (handed over), waiting for the one slot

    const erased = await request(t.url)
      .post('/admin/erasure')
      .set(op)
      .send({ email: `${waiting}@example.com`, reason: 'gdpr' });
    expect([erased.status, erased.body.recipientsBlanked]).toEqual([200, 1]);
    // The notice reaches the relay after the erasure's commit; a request that starts during its re-read waits for it.
    await waitFor('the relay re-read what it holds', async () => rereads.length > 0);

    email.release(200);
    await waitFor('the held e-mail settled', async () => {
      const [row] = (await outboxRows(db, waiting)).filter((r) => r.destination === 'email');
      return row.status !== 'delivering';
    });
    const [after] = (await outboxRows(db, waiting)).filter((r) => r.destination === 'email');
    expect(after).toMatchObject({ status: 'dead', last_error: 'erased' });
    expect(email.requests.map((r) => JSON.parse(r.body).to)).toEqual([first]);
    expect(email.requests.some((r) => r.body.includes(`${waiting}@example.com`))).toBe(false);
  });

  it('a request slot that frees during the re-read waits for it: the e-mail is still not sent', async () => {
    const repository = t.app.get(OutboxRepository);
    const reread = repository.erasedAmong.bind(repository);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let calls = 0;
    // The re-read's round trip, widened: it answers only once the test opens the gate.
    jest.spyOn(repository, 'erasedAmong').mockImplementation(async (ids) => {
      calls++;
      await gate;
      return reread(ids);
    });
    const orders = t.app.get(OrdersService);
    for (const id of ['held-c', 'held-d']) {
      await orders.create({ tenantId: TENANT, id, totalMinor: 1000, currency: 'eur', customerEmail: `${id}@example.com` });
    }
    email.failNext(1, { kind: 'hold' });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'held-c' }));
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'held-d' }));
    await drain(t);

    await email.waitForRequests(1);
    const first = JSON.parse(email.requests[0].body).to as string;
    const waiting = first === 'held-c@example.com' ? 'held-d' : 'held-c';

    const erased = await request(t.url)
      .post('/admin/erasure')
      .set(op)
      .send({ email: `${waiting}@example.com`, reason: 'gdpr' });
    expect([erased.status, erased.body.recipientsBlanked]).toEqual([200, 1]);
    await waitFor('the relay started its re-read', async () => calls > 0);

    email.release(200); // the slot frees while the re-read is in flight: the held e-mail's task starts and waits for it
    await new Promise((r) => setTimeout(r, 300));
    expect(email.requests).toHaveLength(1); // it did wait
    open();

    await waitFor('the held e-mail settled', async () => {
      const [row] = (await outboxRows(db, waiting)).filter((r) => r.destination === 'email');
      return row.status !== 'delivering';
    });
    const [after] = (await outboxRows(db, waiting)).filter((r) => r.destination === 'email');
    const sentTo = email.requests.map((r) => JSON.parse(r.body).to);
    expect({ status: after.status, last_error: after.last_error, sentTo }).toEqual({
      status: 'dead',
      last_error: 'erased',
      sentTo: [first],
    });
  });
});
