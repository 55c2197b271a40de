import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { instant, money } from '../format';
import { href } from '../router';
import { ErrorBanner, Loading, Status, useLoad } from '../ui';

export function Orders({ api, query, go }: { api: Api; query: Record<string, string>; go: (hash: string) => void }) {
  const [tenant, setTenant] = useState(query.tenant ?? '');
  const [id, setId] = useState(query.id ?? '');
  return (
    <section>
      <h1>Orders</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go(href({ page: 'orders', query: { tenant: tenant.trim(), id: id.trim() } }));
        }}
      >
        <label>
          tenant
          <input name="tenant" required value={tenant} onInput={(e) => setTenant((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          order id
          <input name="id" required value={id} onInput={(e) => setId((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" data-test="order-lookup">
          Look up
        </button>
      </form>
      {query.tenant && query.id && <OrderView api={api} tenant={query.tenant} id={query.id} />}
    </section>
  );
}

function OrderView({ api, tenant, id }: { api: Api; tenant: string; id: string }) {
  const { data, error } = useLoad(() => api.order(tenant, id), [tenant, id]);
  if (error !== undefined) return <ErrorBanner error={error} />;
  if (!data) return <Loading />;
  return (
    <dl class="facts" data-test="order">
      <dt>order</dt>
      <dd>
        {data.tenantId}/{data.id}
      </dd>
      <dt>status</dt>
      <dd>
        <Status value={data.status} />
      </dd>
      <dt>total</dt>
      <dd>{money(data.totalMinor, data.currency)}</dd>
      <dt>payment</dt>
      <dd class="mono">{data.providerPaymentId ?? '–'}</dd>
      {data.customerEmail !== undefined && (
        <>
          <dt>customer</dt>
          <dd>{data.customerEmail}</dd>
        </>
      )}
      <dt>last payment error</dt>
      <dd>{data.lastPaymentError ?? '–'}</dd>
      <dt>updated</dt>
      <dd>{instant(data.updatedAt)}</dd>
      <dt>operations</dt>
      <dd>
        <a href={href({ page: 'outbox', query: { tenant: data.tenantId } })}>outbox of tenant {data.tenantId}</a>
      </dd>
    </dl>
  );
}
