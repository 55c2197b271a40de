import { useState } from 'preact/hooks';
import type { Api, OutboxEntry, Session } from '../api';
import { instant } from '../format';
import { href } from '../router';
import { ActionWithReason, ErrorBanner, Loading, EmptyRow, Pager, Status, useLoad } from '../ui';

const STATUSES = ['', 'pending', 'delivering', 'delivered', 'unresolved', 'dead'];

/** Retry (dead, unresolved) and resolve as delivered (unresolved): each with a reason. */
export function OutboxActions({ api, entry, done }: { api: Api; entry: OutboxEntry; done: () => void }) {
  if (entry.status !== 'dead' && entry.status !== 'unresolved') return null;
  return (
    <span class="actions">
      <ActionWithReason label="Retry" test={`retry-${entry.id}`} run={(reason) => api.retry(entry.id, reason)} done={done} />
      {entry.status === 'unresolved' && (
        <ActionWithReason
          label="Mark delivered"
          test={`resolve-${entry.id}`}
          run={(reason) => api.resolve(entry.id, 'delivered', reason)}
          done={done}
        />
      )}
    </span>
  );
}

export function Outbox({
  api,
  session,
  query,
  go,
}: {
  api: Api;
  session: Session;
  query: Record<string, string>;
  go: (hash: string) => void;
}) {
  const key = JSON.stringify(query);
  const { data, error, reload } = useLoad(() => api.outbox({ ...query, limit: 50 }), [key]);
  const filter = Object.fromEntries(['status', 'destination', 'tenant'].filter((f) => query[f]).map((f) => [f, query[f]]));
  const [draft, setDraft] = useState<Record<string, string>>(filter);
  return (
    <section>
      <h1>Outbox</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go(href({ page: 'outbox', query: Object.fromEntries(Object.entries(draft).filter(([, v]) => v)) }));
        }}
      >
        <label>
          status
          <select
            name="status"
            value={draft.status ?? ''}
            onChange={(e) => setDraft({ ...draft, status: (e.target as HTMLSelectElement).value })}
          >
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s || 'any'}
              </option>
            ))}
          </select>
        </label>
        {(['destination', 'tenant'] as const).map((f) => (
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
          <table data-test="outbox-list">
            <thead>
              <tr>
                <th>id</th>
                <th>created</th>
                <th>operation key</th>
                <th>status</th>
                <th>attempts</th>
                <th>last</th>
                <th>event</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {data.items.map((o) => (
                <tr key={o.id} data-test="outbox-row" data-status={o.status} data-tenant={o.tenantId}>
                  <td>{o.id}</td>
                  <td>{instant(o.createdAt)}</td>
                  <td class="mono">{o.operationKey}</td>
                  <td>
                    <Status value={o.status} />
                    {o.outcomeUnknown && <span class="muted"> (outcome unknown)</span>}
                  </td>
                  <td>{o.attempts}</td>
                  <td class="muted">
                    {o.lastStatusCode ?? ''} {o.lastError ?? ''}
                  </td>
                  <td>{o.sourceEventId && <a href={href({ page: 'event', id: o.sourceEventId })}>{o.sourceEventId}</a>}</td>
                  <td>{session.role === 'operator' && <OutboxActions api={api} entry={o} done={reload} />}</td>
                </tr>
              ))}
              {data.items.length === 0 && <EmptyRow columns={8}>No entries match.</EmptyRow>}
            </tbody>
          </table>
          <Pager page="outbox" filter={filter} cursor={query.cursor} next={data.nextCursor} go={go} />
        </>
      )}
    </section>
  );
}
