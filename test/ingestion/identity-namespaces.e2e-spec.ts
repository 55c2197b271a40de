import { signGithub, signShopify } from '../support/signers';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const GITHUB_SECRET = 'github-secret-for-namespaces-0123';
const SHOPIFY_SECRET = 'shopify-secret-for-namespaces-0123';
const before = [
  { id: 'gh', provider: 'github', tenantId: 'acme', secrets: [{ label: 'k', value: GITHUB_SECRET }] },
  { id: 'shop', provider: 'shopify', tenantId: 'acme', secrets: [{ label: 'k', value: SHOPIFY_SECRET }] },
];
const after = [
  { ...before[0], expect: { hookId: '123' } },
  { ...before[1], expect: { shopDomain: 'acme.myshopify.com' } },
];

/**
 * The identity of a GitHub delivery or a Shopify event does not depend on the endpoint's
 * `expect`: adding `expect.hookId` (GitHub reconciliation needs it) or `expect.shopDomain` to a
 * live endpoint must not make a resend of an earlier event a second event. Found by an
 * adversarial review; both tests failed before.
 */
describe('identity namespaces of GitHub and Shopify endpoints', () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await db.drop();
  });

  const post = async (endpoint: string, signed: { headers: Record<string, string>; body: string }) => {
    const res = await fetch(`${t!.url}/webhooks/${endpoint}`, { method: 'POST', headers: signed.headers, body: signed.body });
    return (await res.json()) as Record<string, unknown>;
  };
  const delivery = '72d3162e-cc78-11e3-81ab-4c9367dc0958';
  const push = signGithub({ ref: 'refs/heads/main' }, GITHUB_SECRET, delivery, 'push');
  const order = signShopify({ id: 1001 }, SHOPIFY_SECRET, 'shopify-event-1');

  it('a resend after `expect` is added to the endpoint is a duplicate', async () => {
    t = await startTestApp({ databaseUrl: db.url, endpoints: before });
    expect(await post('gh', push)).toEqual({ status: 'accepted', eventId: delivery });
    expect(await post('shop', order)).toEqual({ status: 'accepted', eventId: 'shopify-event-1' });
    await t.close();

    t = await startTestApp({ databaseUrl: db.url, endpoints: after });
    expect([await post('gh', push), await post('shop', order)]).toEqual([
      { status: 'duplicate', eventId: delivery },
      { status: 'duplicate', eventId: 'shopify-event-1' },
    ]);
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox`)).toEqual([{ n: 2 }]);
  });

  it('a resend of an event an earlier version stored under the endpoint is a duplicate, with or without expect now', async () => {
    for (const endpoints of [before, after]) {
      t = await startTestApp({ databaseUrl: db.url, endpoints });
      await db.query('TRUNCATE webhook_inbox');
      expect(await post('gh', push)).toEqual({ status: 'accepted', eventId: delivery });
      expect(await post('shop', order)).toEqual({ status: 'accepted', eventId: 'shopify-event-1' });
      // As the versions before 2026-12-07 stored them for an endpoint without expect: under the endpoint.
      await db.query(`UPDATE webhook_inbox SET source_scope = 'acme:' || provider || ':endpoint-' || endpoint_id`);
      expect([await post('gh', push), await post('shop', order)]).toEqual([
        { status: 'duplicate', eventId: delivery },
        { status: 'duplicate', eventId: 'shopify-event-1' },
      ]);
      expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox`)).toEqual([{ n: 2 }]);
      await t.close();
      t = undefined;
    }
  });

  it("two Shopify endpoints of a tenant receiving one shop's event (a second subscription, a URL being moved) store it once", async () => {
    const second = { ...before[1], id: 'shop-new', eventTypes: ['orders/paid'] };
    const first = { ...before[1], eventTypes: ['orders/create'] };
    t = await startTestApp({ databaseUrl: db.url, endpoints: [first, second] });
    const paid = signShopify({ id: 1002 }, SHOPIFY_SECRET, 'shopify-event-2');
    // The endpoint that ignores the topic first; the one that takes it takes the row over.
    expect(await post('shop', paid)).toMatchObject({ status: 'ignored' });
    expect(await post('shop-new', paid)).toEqual({ status: 'accepted', eventId: 'shopify-event-2' });
    expect(await db.query(`SELECT endpoint_id, status FROM webhook_inbox`)).toEqual([{ endpoint_id: 'shop-new', status: 'pending' }]);
  });
});
