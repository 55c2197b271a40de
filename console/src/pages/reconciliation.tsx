import { useState } from 'preact/hooks';
import type { Api, EndpointReconciliation, ReconciliationRun, Session } from '../api';
import { instant } from '../format';
import { ActionWithReason, EmptyRow, ErrorBanner, Loading, Status, useLoad } from '../ui';

function outcomes(r: ReconciliationRun): string {
  const parts = [`${r.accepted} accepted`];
  if (r.duplicates !== null) parts.push(`${r.duplicates} duplicates`);
  if (r.ignored !== null) parts.push(`${r.ignored} ignored`);
  if (r.invalid !== null) parts.push(`${r.invalid} invalid`);
  const reasons = Object.entries(r.byReason ?? {}).map(([k, n]) => `${k} ${n}`);
  return parts.join(', ') + (reasons.length ? ` (${reasons.join(', ')})` : '');
}

export function Reconciliation({ api, session }: { api: Api; session: Session }) {
  const { data, error, loading, reload } = useLoad(() => api.reconciliation(), []);
  const [requested, setRequested] = useState<string>();
  return (
    <section>
      <h1>
        Reconciliation{' '}
        <button class="secondary small" onClick={reload} disabled={loading} data-test="refresh">
          Refresh
        </button>
      </h1>
      <p class="muted">
        Each reconcilable endpoint's provider API is listed from its cursor; events it has that the inbox does not are taken in.
      </p>
      {error !== undefined && <ErrorBanner error={error} />}
      {!data && error === undefined && <Loading />}
      {data && data.endpoints.length === 0 && <p class="muted">No endpoint has a provider API to reconcile with.</p>}
      {requested && (
        <p class="notice" role="status" data-test="run-requested">
          {requested}
        </p>
      )}
      {data?.endpoints.map((e) => (
        <EndpointRuns
          key={e.endpointId}
          e={e}
          api={api}
          operator={session.role === 'operator'}
          done={(message) => {
            setRequested(message);
            reload();
          }}
        />
      ))}
    </section>
  );
}

function EndpointRuns({
  e,
  api,
  operator,
  done,
}: {
  e: EndpointReconciliation;
  api: Api;
  operator: boolean;
  done: (message: string) => void;
}) {
  const [from, setFrom] = useState('');
  const [dryRun, setDryRun] = useState(true);
  return (
    <article class="card" data-test="reconciliation-endpoint" data-endpoint={e.endpointId}>
      <h2>
        {e.endpointId} <span class="muted">({e.provider})</span>
      </h2>
      <dl class="facts">
        <dt>schedule</dt>
        <dd>{e.scheduled ? `every ${e.intervalSeconds} s, looking back ${e.lookbackHours} h` : 'on request only'}</dd>
        <dt>cursor</dt>
        <dd>{instant(e.cursor) || '–'}</dd>
        <dt>last success</dt>
        <dd data-test="last-success">{instant(e.lastSuccessAt) || 'never'}</dd>
      </dl>
      {operator && (
        <div class="actions">
          <ActionWithReason
            label="Run now"
            test={`run-${e.endpointId}`}
            run={(reason) =>
              api.runReconciliation({ endpoint: e.endpointId, from: from ? new Date(from).toISOString() : undefined, dryRun, reason })
            }
            done={(result) => {
              const r = result as { runs: { id: string }[]; skipped: { reason: string }[] };
              done(
                r.runs.length
                  ? `Run ${r.runs.map((x) => x.id).join(', ')} requested${dryRun ? ' (dry run)' : ''}: an instance with the maintenance role runs it.`
                  : `Not requested: ${r.skipped.map((s) => s.reason).join(', ')}.`,
              );
            }}
          >
            <label>
              from (optional; default: the cursor)
              <input type="datetime-local" name="from" value={from} onInput={(ev) => setFrom((ev.target as HTMLInputElement).value)} />
            </label>
            <label class="inline">
              <input type="checkbox" name="dryRun" checked={dryRun} onChange={(ev) => setDryRun((ev.target as HTMLInputElement).checked)} />{' '}
              dry run (list, take nothing in)
            </label>
          </ActionWithReason>
        </div>
      )}
      <table data-test="runs">
        <thead>
          <tr>
            <th>run</th>
            <th>requested</th>
            <th>by</th>
            <th>status</th>
            <th>listed</th>
            <th>found missing</th>
            <th>outcomes</th>
            <th>API calls</th>
            <th>error</th>
          </tr>
        </thead>
        <tbody>
          {e.recentRuns.map((r) => (
            <tr key={r.id} data-test="run-row" data-status={r.status}>
              <td>
                {r.id}
                {r.dryRun && <span class="muted"> (dry run)</span>}
              </td>
              <td>{instant(r.requestedAt)}</td>
              <td>
                {r.requestedBy}
                <div class="muted">{r.reason}</div>
              </td>
              <td>
                <Status value={r.status} />
              </td>
              <td>{r.listed}</td>
              <td data-test="found-missing">{r.foundMissing}</td>
              <td>{outcomes(r)}</td>
              <td>{r.apiCalls}</td>
              <td class="mono" data-test="run-error">
                {r.error ?? ''}
              </td>
            </tr>
          ))}
          {e.recentRuns.length === 0 && <EmptyRow columns={9}>No run yet.</EmptyRow>}
        </tbody>
      </table>
    </article>
  );
}
