import { useState } from 'preact/hooks';
import type { Api, EffectPreview, Session } from '../api';
import { instant } from '../format';
import { describeEntry } from '../timeline';
import { ActionWithReason, ErrorBanner, Loading, Status, useLoad } from '../ui';
import { OutboxActions } from './outbox';

const SETTLED = new Set(['done', 'ignored', 'quarantined']);

export function EventPage({ api, session, id }: { api: Api; session: Session; id: string }) {
  const operator = session.role === 'operator';
  const timeline = useLoad(() => api.timeline(id), [id]);
  // The payload only for operators: a viewer never asks for it (and the API would not send it).
  const payload = useLoad(() => (operator ? api.event(id) : Promise.resolve(undefined)), [id, operator]);
  const reload = () => {
    timeline.reload();
    payload.reload();
  };
  if (timeline.error !== undefined) return <ErrorBanner error={timeline.error} />;
  const data = timeline.data;
  if (!data) return <Loading />;
  const e = data.event;
  return (
    <section>
      <h1>
        Event {e.id} <Status value={e.status} />{' '}
        <button class="secondary small" onClick={reload} data-test="refresh">
          Refresh
        </button>
      </h1>
      <dl class="facts" data-test="event-facts">
        <dt>event id</dt>
        <dd class="mono">{e.eventId}</dd>
        <dt>type</dt>
        <dd>{e.eventType}</dd>
        <dt>endpoint</dt>
        <dd>
          {e.endpointId} ({e.provider}, tenant {e.tenantId})
        </dd>
        <dt>status reason</dt>
        <dd data-test="status-reason">{e.statusReason ?? '–'}</dd>
        <dt>attempts</dt>
        <dd>{e.attempts}</dd>
        <dt>last error</dt>
        <dd>{e.lastError ?? '–'}</dd>
        <dt>payload sha256</dt>
        <dd class="mono">{e.payloadSha256}</dd>
      </dl>
      {operator && <PreviewPanel api={api} id={e.id} key={`${e.id}:${e.status}`} />}
      {operator && (
        <div class="actions" data-test="event-actions">
          {SETTLED.has(e.status) && !e.payloadPurged && (
            <ActionWithReason label="Replay" test="replay" run={(reason) => api.replay(e.id, reason)} done={reload} />
          )}
          {(e.status === 'pending' || e.status === 'processing') && (
            <ActionWithReason label="Quarantine" test="quarantine" danger run={(reason) => api.quarantine(e.id, reason)} done={reload} />
          )}
        </div>
      )}
      <h2>Timeline</h2>
      <ol class="timeline" data-test="timeline">
        {data.entries.map((entry, i) => {
          const { title, facts, tone } = describeEntry(entry);
          return (
            <li key={i} class={`tl tl-${tone}`} data-test="timeline-entry" data-kind={entry.kind}>
              <time>{instant(entry.at)}</time>
              <span class="tl-title">{title}</span>
              {facts.length > 0 && <span class="tl-facts">{facts.join(' · ')}</span>}
            </li>
          );
        })}
      </ol>
      <h2>Operations</h2>
      <table data-test="operations">
        <thead>
          <tr>
            <th>operation key</th>
            <th>destination</th>
            <th>status</th>
            <th>attempts</th>
            <th>last</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data.operations.map((o) => (
            <tr key={o.id} data-test="operation" data-status={o.status}>
              <td class="mono">{o.operationKey}</td>
              <td>{o.destination}</td>
              <td>
                <Status value={o.status} />
              </td>
              <td>{o.attempts}</td>
              <td class="muted">
                {o.lastStatusCode ?? ''} {o.lastError ?? ''}
              </td>
              <td>{operator && <OutboxActions api={api} entry={o} done={reload} />}</td>
            </tr>
          ))}
          {data.operations.length === 0 && (
            <tr>
              <td colSpan={6} class="muted">
                This event created no operations.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {operator && (
        <>
          <h2>Payload</h2>
          {payload.error !== undefined && <ErrorBanner error={payload.error} />}
          {payload.data &&
            (payload.data.payloadPurged ? (
              <p class="muted">Purged by retention (identity, digest and status are kept).</p>
            ) : (
              <pre class="payload" data-test="payload">
                {JSON.stringify(payload.data.payload, null, 2)}
              </pre>
            ))}
        </>
      )}
    </section>
  );
}

const CONFIRM_NOTE: Record<EffectPreview['confirmRead'], string | undefined> = {
  not_needed: undefined,
  stored_reading: "with the provider reading stored at its last processing (the replay reads the provider's state again)",
  skipped: 'from the body only: its endpoint confirms with a provider read, which the preview never makes',
};

/** What a replay would do now, computed by the handler in a transaction always rolled back: shown before the operator replays. */
function PreviewPanel({ api, id }: { api: Api; id: string }) {
  const [preview, setPreview] = useState<EffectPreview>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const run = () => {
    setBusy(true);
    setError(undefined);
    api
      .preview(id)
      .then(setPreview, setError)
      .finally(() => setBusy(false));
  };
  return (
    <div class="preview" data-test="effect-preview">
      <button class="secondary" onClick={run} disabled={busy} data-test="preview">
        {preview ? 'Preview again' : 'Preview replay'}
      </button>
      {error !== undefined && <ErrorBanner error={error} />}
      {preview && (
        <div data-test="preview-result" data-outcome={preview.outcome.status}>
          <p>
            A replay would end <strong data-test="preview-outcome">{preview.outcome.status}</strong>
            {preview.outcome.reason ? ` (${preview.outcome.reason})` : ''}
            {preview.outcome.handler ? ` in ${preview.outcome.handler}` : ''}.
            {preview.replayRefusal && (
              <span class="error" data-test="preview-refusal">
                {' '}
                The replay itself would be refused: {preview.replayRefusal}.
              </span>
            )}
          </p>
          {CONFIRM_NOTE[preview.confirmRead] && <p class="muted">Previewed {CONFIRM_NOTE[preview.confirmRead]}.</p>}
          <ul data-test="preview-transitions">
            {preview.transitions.map((t, i) => (
              <li key={i}>
                order {t.tenantId}/{t.orderId}: {t.from} → {t.to}
              </li>
            ))}
            {preview.transitions.length === 0 && <li class="muted">No order transition.</li>}
          </ul>
          <ul data-test="preview-operations">
            {preview.operations.map((o) => (
              <li key={o.operationKey} class="mono">
                {o.operationKey} → {o.destination} ({o.operationType})
              </li>
            ))}
            {preview.operations.length === 0 && <li class="muted">No new operation.</li>}
          </ul>
          <p class="muted" data-test="preview-writes">
            Rows written:{' '}
            {Object.entries(preview.writes)
              .map(([table, w]) => `${table} +${w.inserted} ~${w.updated} -${w.deleted}`)
              .join(', ') || 'none'}
            . Nothing of it was kept.
          </p>
        </div>
      )}
    </div>
  );
}
