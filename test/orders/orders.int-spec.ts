import { OrdersService } from '../../src/orders/orders.service';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

describe('OrdersService create/get', () => {
  let db: TestDatabase;
  let t: TestApp;
  let orders: OrdersService;
  const base = { tenantId: 'acme', totalMinor: 1999, currency: 'EUR', customerEmail: 'a@example.com' };

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url });
    orders = t.app.get(OrdersService);
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('creates an awaiting order with a lower-case currency and reads it back', async () => {
    const created = await orders.create({ ...base, id: 'o1' });
    expect(created).toMatchObject({
      tenantId: 'acme',
      id: 'o1',
      status: 'awaiting_payment',
      totalMinor: 1999,
      currency: 'eur',
      providerPaymentId: null,
    });
    expect(await orders.get('acme', 'o1')).toEqual(created);
  });

  it('refuses a second order with the same id (409) and an unknown order is 404', async () => {
    await expect(orders.create({ ...base, id: 'o1' })).rejects.toMatchObject({ status: 409, reason: 'order_exists' });
    await expect(orders.get('acme', 'nope')).rejects.toMatchObject({ status: 404, reason: 'order_not_found' });
    await expect(orders.get('other-tenant', 'o1')).rejects.toMatchObject({ status: 404 });
  });

  it('refuses a payment id already bound to another order of the tenant (409)', async () => {
    await orders.create({ ...base, id: 'o2', providerPaymentId: 'pi_2' });
    await expect(orders.create({ ...base, id: 'o3', providerPaymentId: 'pi_2' })).rejects.toMatchObject({
      status: 409,
      reason: 'payment_already_bound',
    });
  });

  it.each([
    [{ totalMinor: 1.5 }, 'invalid_total_minor'],
    [{ totalMinor: -1 }, 'invalid_total_minor'],
    [{ currency: 'euro' }, 'invalid_currency'],
    [{ customerEmail: 'nope' }, 'invalid_customer_email'],
    [{ id: '' }, 'invalid_order_id'],
    [{ tenantId: 'a b' }, 'invalid_tenant_id'],
  ])('validates %j -> 400 %s', async (override, reason) => {
    await expect(orders.create({ ...base, id: 'ov', ...override } as never)).rejects.toMatchObject({ status: 400, reason });
  });
});
