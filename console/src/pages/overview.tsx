import type { Api } from '../api';
import { age, perMinute } from '../format';
import { href } from '../router';
import { ErrorBanner, Loading, useLoad } from '../ui';
import { Trends } from './trends';

function Tile({
  label,
  value,
  test,
  link,
  alert,
}: {
  label: string;
  value: string | number;
  test: string;
  link?: string;
  alert?: boolean;
}) {
  const body = (
    <>
      <span class="tile-value" data-test={test}>
        {value}
      </span>
      <span class="tile-label">{label}</span>
    </>
  );
  return <div class={`tile${alert ? ' tile-alert' : ''}`}>{link ? <a href={link}>{body}</a> : body}</div>;
}

export function Overview({ api }: { api: Api }) {
  const { data, error, loading, reload } = useLoad(() => api.stats(), []);
  if (error) return <ErrorBanner error={error} />;
  if (!data) return <Loading />;
  const inbox = data.inbox;
  const outbox = data.outbox;
  const backlog = (inbox.byStatus.pending ?? 0) + (inbox.byStatus.processing ?? 0);
  return (
    <section>
      <h1>
        Overview{' '}
        <button class="secondary small" onClick={reload} disabled={loading}>
          Refresh
        </button>
      </h1>
      <div class="tiles">
        <Tile
          label="inbox backlog (pending + processing)"
          value={backlog}
          test="backlog"
          link={href({ page: 'inbox', query: { status: 'pending' } })}
        />
        <Tile label="oldest pending" value={age(inbox.oldestPendingAgeSeconds)} test="oldest-pending" />
        <Tile label="accepted" value={perMinute(data.rates?.acceptedPerMinute)} test="accept-rate" />
        <Tile label="done" value={perMinute(data.rates?.donePerMinute)} test="done-rate" />
        <Tile label="delivered" value={perMinute(data.rates?.deliveredPerMinute)} test="deliver-rate" />
        <Tile
          label="quarantined"
          value={inbox.quarantined}
          test="quarantined"
          alert={inbox.quarantined > 0}
          link={href({ page: 'inbox', query: { status: 'quarantined' } })}
        />
        <Tile
          label="outbox unresolved"
          value={outbox.unresolved}
          test="unresolved"
          alert={outbox.unresolved > 0}
          link={href({ page: 'outbox', query: { status: 'unresolved' } })}
        />
        <Tile
          label="outbox dead"
          value={outbox.dead}
          test="dead"
          alert={outbox.dead > 0}
          link={href({ page: 'outbox', query: { status: 'dead' } })}
        />
        <Tile label="outbox oldest pending" value={age(outbox.oldestPendingAgeSeconds)} test="outbox-oldest" />
      </div>
      <p class="muted">
        Rates over the last {Math.round((data.rates?.windowSeconds ?? 300) / 60)} minutes, as of {data.at}.
      </p>
      <Trends api={api} />
      <h2>Per endpoint</h2>
      <table data-test="endpoints">
        <thead>
          <tr>
            <th>endpoint</th>
            <th>pending</th>
            <th>processing</th>
            <th>quarantined</th>
            <th>accepted</th>
          </tr>
        </thead>
        <tbody>
          {(data.byEndpoint ?? []).map((e) => (
            <tr key={e.endpoint}>
              <td>
                <a href={href({ page: 'inbox', query: { endpoint: e.endpoint } })}>{e.endpoint}</a>
              </td>
              <td>{e.pending}</td>
              <td>{e.processing}</td>
              <td>{e.quarantined}</td>
              <td>{perMinute(e.acceptedPerMinute)}</td>
            </tr>
          ))}
          {(data.byEndpoint ?? []).length === 0 && (
            <tr>
              <td colSpan={5} class="muted">
                No open work and nothing accepted lately.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
