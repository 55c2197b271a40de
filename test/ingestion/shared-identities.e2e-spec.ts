import { ageInbox } from '../inbox/worker-fixtures';
import { signStripe, stripeEvent } from '../support/signers';
import { TestApp, useTestApp } from '../support/test-app';
import { TestDatabase } from '../support/test-database';

const PAYMENTS_SECRET = 'whsec_payments_endpoint_secret_0123';
const BILLING_SECRET = 'whsec_billing_endpoint_secret_01234';
const CONNECT_SECRET = 'whsec_connect_endpoint_secret_01234';
const OTHER_SECRET = 'whsec_other_connect_secret_0123456';

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
        // Acme's second connected account, on another platform's Connect endpoint.
        {
          id: 'stripe-connect-other',
          provider: 'stripe',
          tenantId: 'acme',
          secrets: [{ label: 'o', value: OTHER_SECRET }],
          expect: { account: 'acct_other' },
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
    // Stored a day ago, and once looked at by a worker (ignored after a configuration change).
    await ageInbox(db, 1);
    await db.query(`UPDATE webhook_inbox SET attempts = 3, last_error = 'x'`);
    expect(await post('stripe-payments', signStripe(event, PAYMENTS_SECRET))).toEqual({ status: 'accepted', eventId: 'evt_billing_first' });
    // As a new pending row: no attempts, due now, its payload in today's day only.
    expect(
      await db.query(`SELECT attempts, last_error, locked_by, payload_day = (now() AT TIME ZONE 'UTC')::date AS today FROM webhook_inbox`),
    ).toEqual([{ attempts: 0, last_error: null, locked_by: null, today: true }]);
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox_payloads`)).toEqual([{ n: 1 }]);
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

  it("a row an endpoint's expect refused is taken over only by the own copy of an endpoint whose expect takes it", async () => {
    // Another connected account on a platform names an acme order: acme's Connect endpoint refuses it,
    // and so does acme's other one; it stays ignored, for the endpoint it came to.
    const foreign = stripeEvent({ id: 'evt_foreign', type: 'payment_intent.succeeded', account: 'acct_evil' });
    expect(await post('stripe-connect', signStripe(foreign, CONNECT_SECRET))).toMatchObject({
      status: 'ignored',
      reason: 'unexpected_source',
    });
    expect(await post('stripe-connect-other', signStripe(foreign, OTHER_SECRET))).toMatchObject({ status: 'duplicate' });
    expect(await rows()).toEqual([
      { endpoint_id: 'stripe-connect', status: 'ignored', status_reason: 'unexpected_source', verified_with: 'c' },
    ]);

    // acct_other's event, sent to both platforms' endpoints: the one that expects acct_other takes it.
    await db.query('TRUNCATE webhook_inbox');
    const own = stripeEvent({ id: 'evt_other', type: 'payment_intent.succeeded', account: 'acct_other' });
    expect(await post('stripe-connect', signStripe(own, CONNECT_SECRET))).toMatchObject({ status: 'ignored', reason: 'unexpected_source' });
    expect(await post('stripe-connect-other', signStripe(own, OTHER_SECRET))).toEqual({ status: 'accepted', eventId: 'evt_other' });
    expect(await rows()).toEqual([{ endpoint_id: 'stripe-connect-other', status: 'pending', status_reason: null, verified_with: 'o' }]);
  });
});
