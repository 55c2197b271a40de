import { useState } from 'preact/hooks';
import type { Api, Session } from '../api';
import { instant } from '../format';
import { href } from '../router';
import { ActionWithReason, ErrorBanner, Loading, EmptyRow, Pager, Status, useLoad } from '../ui';

const FILTERS = ['status', 'provider', 'type', 'tenant', 'endpoint', 'from', 'to'] as const;
const STATUSES = ['', 'pending', 'processing', 'done', 'ignored', 'quarantined'];
const SETTLED = new Set(['done', 'ignored', 'quarantined']);

export function Inbox({
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
  const { data, error } = useLoad(() => api.inbox({ ...query, limit: 50 }), [key]);
  const filter = Object.fromEntries(FILTERS.filter((f) => query[f]).map((f) => [f, query[f]]));
  const [draft, setDraft] = useState<Record<string, string>>(filter);
  const apply = (e: Event) => {
    e.preventDefault();
    go(href({ page: 'inbox', query: Object.fromEntries(Object.entries(draft).filter(([, v]) => v)) }));
  };
  return (
    <section>
      <h1>Inbox</h1>
      <form class="filters" onSubmit={apply} data-test="inbox-filters">
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
        {(['provider', 'type', 'tenant', 'endpoint'] as const).map((f) => (
          <label key={f}>
            {f}
            <input name={f} value={draft[f] ?? ''} onInput={(e) => setDraft({ ...draft, [f]: (e.target as HTMLInputElement).value })} />
          </label>
        ))}
        {(['from', 'to'] as const).map((f) => (
          <label key={f}>
            {f} (ISO time)
            <input
              name={f}
              placeholder="2026-12-01T00:00:00Z"
              value={draft[f] ?? ''}
              onInput={(e) => setDraft({ ...draft, [f]: (e.target as HTMLInputElement).value })}
            />
          </label>
        ))}
        <button type="submit" data-test="apply-filters">
          Apply
        </button>
      </form>
      {session.role === 'operator' && <BulkReplay api={api} filter={filter} />}
      {error !== undefined && <ErrorBanner error={error} />}
      {!data && error === undefined && <Loading />}
      {data && (
        <>
          <table data-test="inbox-list">
            <thead>
              <tr>
                <th>id</th>
                <th>received</th>
                <th>endpoint</th>
                <th>type</th>
                <th>event id</th>
                <th>status</th>
                <th>attempts</th>
                <th>reason / last error</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((e) => (
                <tr key={e.id} data-test="inbox-row" data-status={e.status} data-tenant={e.tenantId}>
                  <td>
                    <a href={href({ page: 'event', id: e.id })}>{e.id}</a>
                  </td>
                  <td>{instant(e.receivedAt)}</td>
                  <td>{e.endpointId}</td>
                  <td>{e.eventType}</td>
                  <td class="mono">{e.eventId}</td>
                  <td>
                    <Status value={e.status} />
                  </td>
                  <td>{e.attempts}</td>
                  <td class="muted">{e.statusReason ?? e.lastError ?? ''}</td>
                </tr>
              ))}
              {data.items.length === 0 && <EmptyRow columns={8}>No events match.</EmptyRow>}
            </tbody>
          </table>
          <Pager page="inbox" filter={filter} cursor={query.cursor} next={data.nextCursor} go={go} />
        </>
      )}
    </section>
  );
}

/** Replays every settled event matching the list's filter: a dry run first shows how many. */
function BulkReplay({ api, filter }: { api: Api; filter: Record<string, string> }) {
  const [counted, setCounted] = useState<{ key: string; count: number }>();
  const [result, setResult] = useState<string>();
  const [error, setError] = useState<unknown>();
  const key = JSON.stringify(filter);
  const settledFilter = !filter.status || SETTLED.has(filter.status);
  const dryRun = async () => {
    setError(undefined);
    setResult(undefined);
    try {
      const r = await api.bulkReplay(filter, true, 'dry run from the console');
      setCounted({ key, count: r.count });
    } catch (err) {
      setError(err);
    }
  };
  return (
    <div class="panel" data-test="bulk-replay">
      <strong>Bulk replay</strong> of the settled events this filter matches.{' '}
      {!settledFilter ? (
        <span class="muted">Only done, ignored or quarantined events can be replayed.</span>
      ) : (
        <>
          <button class="secondary" onClick={dryRun} data-test="bulk-dry-run">
            Dry run
          </button>
          {counted?.key === key && (
            <>
              <span data-test="bulk-count"> {counted.count} would be replayed. </span>
              {counted.count > 0 && (
                <ActionWithReason
                  label={`Replay ${counted.count}`}
                  test="bulk-replay-run"
                  danger
                  run={(reason) => api.bulkReplay(filter, false, reason)}
                  done={(r) => {
                    setCounted(undefined);
                    setResult(`${(r as { count: number }).count} replayed.`);
                  }}
                />
              )}
            </>
          )}
          {result && <span data-test="bulk-result"> {result}</span>}
        </>
      )}
      {error !== undefined && <ErrorBanner error={error} />}
    </div>
  );
}
