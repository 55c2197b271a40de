import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { instant } from '../format';
import { href } from '../router';
import { EmptyRow, ErrorBanner, Loading, Pager, useLoad } from '../ui';

const FILTERS = ['endpoint', 'reason'] as const;

/** The rejected-request log: a sample of refused webhook requests, per endpoint (never a header value or a body). */
export function Rejections({ api, query, go }: { api: Api; query: Record<string, string>; go: (hash: string) => void }) {
  const key = JSON.stringify(query);
  const { data, error } = useLoad(() => api.rejections({ ...query, limit: 50 }), [key]);
  const filter = Object.fromEntries(FILTERS.filter((f) => query[f]).map((f) => [f, query[f]]));
  const [draft, setDraft] = useState<Record<string, string>>(filter);
  return (
    <section>
      <h1>Rejected requests</h1>
      <p class="muted">
        A sample of refused webhook requests (REJECTION_LOG_PER_MINUTE per endpoint); “not logged before” counts the refusals left out since
        the row before. Every refusal is counted in the metric webhook_requests_total.
      </p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go(href({ page: 'rejections', query: Object.fromEntries(Object.entries(draft).filter(([, v]) => v)) }));
        }}
      >
        {FILTERS.map((f) => (
          <label key={f}>
            {f}
            <input name={f} value={draft[f] ?? ''} onInput={(e) => setDraft({ ...draft, [f]: (e.target as HTMLInputElement).value })} />
          </label>
        ))}
        <button type="submit">Apply</button>
      </form>
      {error !== undefined && <ErrorBanner error={error} />}
      {!data && error === undefined && <Loading />}
      {data && (
        <>
          <table data-test="rejection-list">
            <thead>
              <tr>
                <th>at</th>
                <th>endpoint</th>
                <th>reason</th>
                <th>status</th>
                <th>client</th>
                <th>declared bytes</th>
                <th>read bytes</th>
                <th>not logged before</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((r) => (
                <tr key={r.id} data-test="rejection-row" data-reason={r.reason}>
                  <td>{instant(r.at)}</td>
                  <td>
                    <a href={href({ page: 'rejections', query: { endpoint: r.endpointId } })}>{r.endpointId}</a>{' '}
                    <span class="muted">({r.tenantId})</span>
                  </td>
                  <td class="mono">{r.reason}</td>
                  <td>{r.httpStatus}</td>
                  <td class="mono">{r.remoteAddress}</td>
                  <td>{r.declaredBytes ?? '–'}</td>
                  <td>{r.receivedBytes ?? '–'}</td>
                  <td>{r.unloggedBefore}</td>
                </tr>
              ))}
              {data.items.length === 0 && <EmptyRow columns={8}>No rejected requests match.</EmptyRow>}
            </tbody>
          </table>
          <Pager page="rejections" filter={filter} cursor={query.cursor} next={data.nextCursor} go={go} />
        </>
      )}
    </section>
  );
}
