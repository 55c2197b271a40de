import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { instant } from '../format';
import { href } from '../router';
import { ErrorBanner, Loading, EmptyRow, Pager, useLoad } from '../ui';

export function Audit({ api, query, go }: { api: Api; query: Record<string, string>; go: (hash: string) => void }) {
  const key = JSON.stringify(query);
  const { data, error } = useLoad(() => api.audit({ ...query, limit: 50 }), [key]);
  const filter = Object.fromEntries(['action', 'actor', 'target'].filter((f) => query[f]).map((f) => [f, query[f]]));
  const [draft, setDraft] = useState<Record<string, string>>(filter);
  return (
    <section>
      <h1>Audit log</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go(href({ page: 'audit', query: Object.fromEntries(Object.entries(draft).filter(([, v]) => v)) }));
        }}
      >
        {(['action', 'actor', 'target'] as const).map((f) => (
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
          <table data-test="audit-list">
            <thead>
              <tr>
                <th>at</th>
                <th>actor</th>
                <th>action</th>
                <th>target</th>
                <th>status</th>
                <th>reason</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((a) => (
                <tr key={a.id} data-test="audit-row">
                  <td>{instant(a.at)}</td>
                  <td>
                    {a.actor} ({a.role})
                  </td>
                  <td>{a.action}</td>
                  <td class="mono">{targetLink(a.target)}</td>
                  <td>{a.beforeStatus || a.afterStatus ? `${a.beforeStatus ?? '?'} → ${a.afterStatus ?? '?'}` : ''}</td>
                  <td>{a.reason}</td>
                </tr>
              ))}
              {data.items.length === 0 && <EmptyRow columns={6}>No entries match.</EmptyRow>}
            </tbody>
          </table>
          <Pager page="audit" filter={filter} cursor={query.cursor} next={data.nextCursor} go={go} />
        </>
      )}
    </section>
  );
}

function targetLink(target: string) {
  const m = /^inbox:(\d+)$/.exec(target);
  return m ? <a href={href({ page: 'event', id: m[1] })}>{target}</a> : target;
}
