import type { Api, Destination, OutboxEntry, Session } from '../api';
import { instant } from '../format';
import { href } from '../router';
import { EmptyRow, ErrorBanner, Loading, Status, useLoad } from '../ui';
import { OutboxActions } from './outbox';

function Circuit({ d }: { d: Destination }) {
  return (
    <span data-test="circuit" data-state={d.circuit.state}>
      <span class={`status circuit-${d.circuit.state}`}>{d.circuit.state.replace('_', ' ')}</span>
      {d.circuit.state === 'open' && d.circuit.retryAt && <span class="muted"> probe at {instant(d.circuit.retryAt)}</span>}
      {d.paused && <span class="status circuit-open"> paused until {instant(d.pausedUntil)}</span>}
    </span>
  );
}

function rate(d: Destination): string {
  const r = d.settings?.rateLimit;
  return r ? `${r.perSecond ?? '?'}/s (burst ${r.burst ?? '?'})` : 'none';
}

export function Destinations({ api }: { api: Api }) {
  const { data, error, loading, reload } = useLoad(() => api.destinations(), []);
  return (
    <section>
      <h1>
        Destinations{' '}
        <button class="secondary small" onClick={reload} disabled={loading} data-test="refresh">
          Refresh
        </button>
      </h1>
      {error !== undefined && <ErrorBanner error={error} />}
      {!data && error === undefined && <Loading />}
      {data && (
        <table data-test="destination-list">
          <thead>
            <tr>
              <th>destination</th>
              <th>circuit</th>
              <th>failures</th>
              <th>rate limit</th>
              <th>pending</th>
              <th>held</th>
              <th>delivering</th>
              <th>unresolved</th>
              <th>dead</th>
              <th>last error</th>
            </tr>
          </thead>
          <tbody>
            {data.items.map((d) => (
              <tr key={d.name} data-test="destination-row" data-name={d.name}>
                <td>
                  <a href={href({ page: 'destination', name: d.name })}>{d.name}</a>
                  {!d.registered && <span class="muted"> (not configured)</span>}
                </td>
                <td>
                  <Circuit d={d} />
                </td>
                <td>{d.circuit.failures}</td>
                <td>{rate(d)}</td>
                <td>{d.backlog.pending}</td>
                <td>{d.backlog.held}</td>
                <td>{d.backlog.delivering}</td>
                <td>{d.backlog.unresolved}</td>
                <td>{d.backlog.dead}</td>
                <td class="muted">{d.lastError}</td>
              </tr>
            ))}
            {data.items.length === 0 && <EmptyRow columns={10}>No destination configured.</EmptyRow>}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** One destination: its state, and its open entries (held ones with the entry they wait for); operators retry or resolve. */
export function DestinationPage({ api, session, name }: { api: Api; session: Session; name: string }) {
  const { data, error, loading, reload } = useLoad(async () => {
    const [all, ...lists] = await Promise.all([
      api.destinations(),
      ...(['unresolved', 'dead', 'pending', 'delivering'] as const).map((status) => api.outbox({ destination: name, status, limit: 50 })),
    ]);
    return { destination: all.items.find((d) => d.name === name), entries: lists.flatMap((l) => l.items) };
  }, [name]);
  return (
    <section>
      <h1>
        Destination {name}{' '}
        <button class="secondary small" onClick={reload} disabled={loading} data-test="refresh">
          Refresh
        </button>
      </h1>
      {error !== undefined && <ErrorBanner error={error} />}
      {!data && error === undefined && <Loading />}
      {data && !data.destination && (
        <div class="error" role="alert">
          <strong class="reason">unknown_destination</strong> No destination named {name}.
        </div>
      )}
      {data?.destination && <Facts d={data.destination} />}
      {data && (
        <>
          <h2>Open entries</h2>
          <Entries entries={data.entries} byId={new Map(data.entries.map((e) => [e.id, e]))} api={api} session={session} reload={reload} />
        </>
      )}
    </section>
  );
}

function Facts({ d }: { d: Destination }) {
  return (
    <dl class="facts" data-test="destination-facts">
      <dt>circuit</dt>
      <dd>
        <Circuit d={d} /> {d.circuit.failures} consecutive failures{d.changedAt ? `, since ${instant(d.changedAt)}` : ''}
      </dd>
      <dt>pause</dt>
      <dd>{d.paused ? `paused until ${instant(d.pausedUntil)} (the destination asked, Retry-After)` : 'not paused'}</dd>
      <dt>rate limit</dt>
      <dd>{rate(d)}</dd>
      <dt>concurrency</dt>
      <dd>{d.settings?.concurrency ?? '–'}</dd>
      <dt>origin</dt>
      <dd class="mono">{d.origin ?? '–'}</dd>
      <dt>last error</dt>
      <dd class="mono" data-test="last-error">
        {d.lastError ?? '–'}
      </dd>
      <dt>open entries</dt>
      <dd>
        {d.backlog.pending} pending ({d.backlog.held} held), {d.backlog.delivering} delivering, {d.backlog.unresolved} unresolved,{' '}
        {d.backlog.dead} dead
      </dd>
    </dl>
  );
}

function Entries({
  entries,
  byId,
  api,
  session,
  reload,
}: {
  entries: OutboxEntry[];
  byId: Map<string, OutboxEntry>;
  api: Api;
  session: Session;
  reload: () => void;
}) {
  return (
    <table data-test="destination-entries">
      <thead>
        <tr>
          <th>id</th>
          <th>created</th>
          <th>operation key</th>
          <th>status</th>
          <th>attempts</th>
          <th>last</th>
          <th>held by</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {entries.map((o) => (
          <tr key={o.id} data-test="entry-row" data-status={o.status} data-held-by={o.heldBy ?? ''}>
            <td>{o.id}</td>
            <td>{instant(o.createdAt)}</td>
            <td class="mono">{o.operationKey}</td>
            <td>
              <Status value={o.status} />
            </td>
            <td>{o.attempts}</td>
            <td class="muted">
              {o.lastStatusCode ?? ''} {o.lastError ?? ''}
            </td>
            <td>
              {o.heldBy && (
                <span data-test="held-by">
                  #{o.heldBy}
                  {byId.get(o.heldBy) && <> ({byId.get(o.heldBy)!.status}: retry or resolve it and this one follows)</>}
                </span>
              )}
            </td>
            <td>{session.role === 'operator' && <OutboxActions api={api} entry={o} done={reload} />}</td>
          </tr>
        ))}
        {entries.length === 0 && <EmptyRow columns={8}>Nothing open for this destination.</EmptyRow>}
      </tbody>
    </table>
  );
}
