import request from 'supertest';
import { OrdersService } from '../../src/orders/orders.service';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { FakeDestination } from '../support/fake-destinations';
import { OPERATOR_TOKEN, TestApp, useTestAppWithDestinations } from '../support/test-app';
import { TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { drain, ENDPOINTS, outboxRows, paymentIntentEvent, postStripe, TENANT } from '../inbox/worker-fixtures';

const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/**
 * An erasure while the receipt e-mail is in flight (`delivering`). Found by an adversarial
 * review: the entry was left unmarked, and once that attempt failed an operator's retry was
 * accepted (200, re-queued, audited as a retry) instead of 409 `recipient_erased`.
 */
describe('erasure of an e-mail entry in flight', () => {
  let db: TestDatabase;
  let t: TestApp;
  let email: FakeDestination;
  useTestAppWithDestinations({ endpoints: ENDPOINTS }, (s) => ({ db, t, email } = s));

  it('an operator retry afterwards is refused as recipient_erased', async () => {
    await t.app
      .get(OrdersService)
      .create({ tenantId: TENANT, id: 'fly-1', totalMinor: 1000, currency: 'eur', customerEmail: 'fly@example.com' });
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'fly-1' }));
    await drain(t);
    email.failNext(1, { kind: 'hold' });
    const relay = t.app.get(OutboxRelay);
    const round = relay.runOnce();
    await email.waitForRequests(1);
    const [inFlight] = await outboxRows(db, 'fly-1');
    expect([inFlight.destination, inFlight.status]).toEqual(['email', 'delivering']);

    const erased = await request(t.url).post('/admin/erasure').set(op).send({ email: 'fly@example.com', reason: 'gdpr' });
    expect(erased.status).toBe(200);
    expect(erased.body.recipientsBlanked).toBe(1);

    // The in-flight attempt is refused by the e-mail API (a permanent 4xx): the entry is dead.
    email.release(400);
    await round;
    await waitFor('the attempt recorded', async () => (await outboxRows(db, 'fly-1'))[0].status !== 'delivering');
    const [after] = await outboxRows(db, 'fly-1');
    expect(after.payload.to).toBe('');

    const retry = await request(t.url).post(`/admin/outbox/${after.id}/retry`).set(op).send({ reason: 'send it again' });
    expect([retry.status, retry.body.reason]).toEqual([409, 'recipient_erased']);
    // The in-flight attempt's outcome was recorded, in its history too: what happened to it is on record.
    expect(after).toMatchObject({ status: 'dead', last_status_code: 400 });
  });
});
