import { signStripe, stripeEvent } from '../support/signers';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';

const PAYMENTS_SECRET = 'whsec_payments_endpoint_secret_0123';
const BILLING_SECRET = 'whsec_billing_endpoint_secret_01234';
const CONNECT_SECRET = 'whsec_connect_endpoint_secret_01234';

/**
 * Two Stripe endpoints of one tenant (two webhook endpoints in Stripe's dashboard, each with its
 * own secret): Stripe sends an event to each endpoint subscribed to its type, and both copies share
 * one identity (the account and mode). Whichever copy comes first, the endpoint that takes the type
 * processes it once. Found by an adversarial review: when the copy of the endpoint that ignores the
 * type came first, the other endpoint's copy was a duplicate of an ignored row, and the payment was
 * never processed. A second review: the row is taken over only by that endpoint's own copy, never
 * handed to another endpoint, and never when `expect` refused it (another account).
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
        // Acme's own connected account on a platform's Connect endpoint.
        {
          id: 'stripe-connect',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: 'c', value: CONNECT_SECRET }],
          expect: { account: 'acct_acme' },
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
  const rows = () => db.query(`SELECT endpoint_id, status, status_reason, verified_with FROM webhook_inbox`);
  const secrets: Record<string, string> = { 'stripe-payments': PAYMENTS_SECRET, 'stripe-billing': BILLING_SECRET };

  it('the endpoint that ignores its type first: the other endpoint takes the row over with its own copy', async () => {
    const event = stripeEvent({ id: 'evt_billing_first', type: 'payment_intent.succeeded' });
    expect(await post('stripe-billing', signStripe(event, BILLING_SECRET))).toMatchObject({ status: 'ignored' });
    expect(await post('stripe-payments', signStripe(event, PAYMENTS_SECRET))).toEqual({ status: 'accepted', eventId: 'evt_billing_first' });
    expect(await rows()).toEqual([{ endpoint_id: 'stripe-payments', status: 'pending', status_reason: null, verified_with: 'p' }]);
    // Its retry, and the ignoring endpoint's, are duplicates.
    expect(await post('stripe-payments', signStripe(event, PAYMENTS_SECRET))).toMatchObject({ status: 'duplicate' });
    expect(await post('stripe-billing', signStripe(event, BILLING_SECRET))).toMatchObject({ status: 'duplicate' });
    expect(await rows()).toHaveLength(1);
  });

  it('the endpoint that takes its type first: the other copy is a duplicate', async () => {
    const event = stripeEvent({ id: 'evt_payments_first', type: 'payment_intent.succeeded' });
    const answers = [];
    for (const endpoint of ['stripe-payments', 'stripe-billing']) answers.push(await post(endpoint, signStripe(event, secrets[endpoint])));
    expect(answers.map((a) => a.status)).toEqual(['accepted', 'duplicate']);
    expect(await rows()).toEqual([{ endpoint_id: 'stripe-payments', status: 'pending', status_reason: null, verified_with: 'p' }]);
  });

  it("an event another account's copy brought in, refused by its endpoint's expect, is never taken over", async () => {
    // Another connected account on the platform names an acme order: the Connect endpoint refuses it.
    const foreign = stripeEvent({ id: 'evt_foreign', type: 'payment_intent.succeeded', account: 'acct_evil' });
    expect(await post('stripe-connect', signStripe(foreign, CONNECT_SECRET))).toMatchObject({
      status: 'ignored',
      reason: 'unexpected_source',
    });
    // Even a copy to an endpoint without that expect (were one ever sent there) does not take it over.
    expect(await post('stripe-payments', signStripe(foreign, PAYMENTS_SECRET))).toMatchObject({ status: 'duplicate' });
    expect(await rows()).toEqual([
      { endpoint_id: 'stripe-connect', status: 'ignored', status_reason: 'unexpected_source', verified_with: 'c' },
    ]);
  });
});
