import { signStripe, stripeEvent } from '../support/signers';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';

const PAYMENTS_SECRET = 'whsec_payments_endpoint_secret_0123';
const BILLING_SECRET = 'whsec_billing_endpoint_secret_01234';

/**
 * Two Stripe endpoints of one tenant (two webhook endpoints in Stripe's dashboard, each with its
 * own secret): Stripe sends an event to each endpoint subscribed to its type, and both copies
 * share one identity (the account and mode). Whichever copy comes first, the event is stored once,
 * for the endpoint that takes its type. Found by an adversarial review: when the copy of the
 * endpoint that ignores the type came first, the other endpoint's copy was a duplicate of an
 * ignored row, and the payment was never processed.
 */
describe('an event two endpoints of a tenant receive (Stripe)', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [
        {
          id: 'stripe-payments',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: 'p', value: PAYMENTS_SECRET }],
          eventTypes: ['payment_intent.succeeded'],
        },
        {
          id: 'stripe-billing',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: 'b', value: BILLING_SECRET }],
          eventTypes: ['invoice.paid'],
        },
      ],
    },
    (started) => ({ db, t } = started),
  );
  beforeEach(async () => {
    await db.query('TRUNCATE webhook_inbox');
  });

  const post = async (endpoint: string, signed: { headers: Record<string, string>; body: string }) => {
    const res = await fetch(`${t.url}/webhooks/${endpoint}`, { method: 'POST', headers: signed.headers, body: signed.body });
    return (await res.json()) as Record<string, unknown>;
  };
  const rows = () => db.query(`SELECT endpoint_id, status, status_reason FROM webhook_inbox`);

  it.each([
    ['the endpoint that ignores its type first', ['stripe-billing', 'stripe-payments']],
    ['the endpoint that takes its type first', ['stripe-payments', 'stripe-billing']],
  ])('is stored once, pending for the endpoint that takes it: %s', async (_, order) => {
    const event = stripeEvent({ id: `evt_both_${order[0]}`, type: 'payment_intent.succeeded' });
    const secrets: Record<string, string> = { 'stripe-payments': PAYMENTS_SECRET, 'stripe-billing': BILLING_SECRET };
    const answers = [];
    for (const endpoint of order) answers.push(await post(endpoint, signStripe(event, secrets[endpoint])));
    expect(answers.map((a) => a.status)).toEqual(['accepted', 'duplicate']);
    expect(await rows()).toEqual([{ endpoint_id: 'stripe-payments', status: 'pending', status_reason: null }]);
  });

  it('an event no endpoint of the tenant takes is stored ignored by the endpoint it came to', async () => {
    const event = stripeEvent({ id: 'evt_neither', type: 'customer.created' });
    expect(await post('stripe-billing', signStripe(event, BILLING_SECRET))).toMatchObject({
      status: 'ignored',
      reason: 'event_type_not_accepted',
    });
    expect(await rows()).toEqual([{ endpoint_id: 'stripe-billing', status: 'ignored', status_reason: 'event_type_not_accepted' }]);
  });
});
