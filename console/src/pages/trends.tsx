import { useMemo, useState } from 'preact/hooks';
import type { Api, ChartWindow, Series } from '../api';
import { Chart } from '../chart';
import { gaugeLine, perMinuteLine, times } from '../series';
import { ErrorBanner, Loading, useLoad } from '../ui';

const WINDOWS: [ChartWindow, string][] = [
  ['1h', 'last hour'],
  ['24h', 'last day'],
  ['7d', 'last week'],
];

/** The overview's charts: a window, an endpoint and a destination to narrow them; the API scopes them to the token's tenants. */
export function Trends({ api }: { api: Api }) {
  const [window, setWindow] = useState<ChartWindow>('1h');
  const [endpoint, setEndpoint] = useState('');
  const [destination, setDestination] = useState('');
  const { data, error } = useLoad(
    () => api.series({ window, endpoint: endpoint || undefined, destination: destination || undefined }),
    [window, endpoint, destination],
  );
  return (
    <section aria-labelledby="trends-heading">
      <h2 id="trends-heading">Trends</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          window
          <select name="window" value={window} onChange={(e) => setWindow((e.target as HTMLSelectElement).value as ChartWindow)}>
            {WINDOWS.map(([w, label]) => (
              <option key={w} value={w}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <Picker name="endpoint" value={endpoint} options={data?.endpoints ?? []} onChange={setEndpoint} />
        <Picker name="destination" value={destination} options={data?.destinations ?? []} onChange={setDestination} />
      </form>
      {error !== undefined && <ErrorBanner error={error} />}
      {!data && error === undefined && <Loading />}
      {data && <Charts series={data} />}
    </section>
  );
}

function Picker({ name, value, options, onChange }: { name: string; value: string; options: string[]; onChange: (v: string) => void }) {
  const all = value && !options.includes(value) ? [...options, value] : options;
  return (
    <label>
      {name}
      <select name={name} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        <option value="">all</option>
        {all.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

function Charts({ series }: { series: Series }) {
  const charts = useMemo(() => {
    const { inbox, outbox, stepSeconds } = series;
    return {
      xs: times(inbox),
      events: [
        perMinuteLine(inbox, 'accepted', stepSeconds, 'accepted', '#2f5bd3'),
        perMinuteLine(inbox, 'done', stepSeconds, 'done', '#067647'),
        perMinuteLine(inbox, 'quarantined', stepSeconds, 'quarantined', '#b42318'),
      ],
      deliveries: [
        perMinuteLine(outbox, 'delivered', stepSeconds, 'delivered', '#067647'),
        perMinuteLine(outbox, 'failed', stepSeconds, 'failed attempts', '#b42318'),
      ],
      backlog: [
        gaugeLine(inbox, (p) => p.backlog, 'inbox backlog', '#2f5bd3'),
        gaugeLine(outbox, (p) => p.backlog, 'outbox backlog', '#b54708'),
      ],
      age: [
        gaugeLine(inbox, (p) => p.oldestPendingAgeSeconds, 'inbox oldest pending', '#2f5bd3'),
        gaugeLine(outbox, (p) => p.oldestPendingAgeSeconds, 'outbox oldest pending', '#b54708'),
      ],
    };
  }, [series]);
  const withDay = series.window !== '1h';
  const step = series.stepSeconds >= 3600 ? `${series.stepSeconds / 3600} h` : `${series.stepSeconds / 60} min`;
  return (
    <>
      <p class="muted">
        Buckets of {step}; rates are per minute, backlog and age the worst seen in a bucket (sampled once a minute by the maintenance role).
      </p>
      <div class="charts">
        <Chart title="Events per minute" xs={charts.xs} lines={charts.events} unit="/min" withDay={withDay} test="chart-events" />
        <Chart
          title="Deliveries per minute"
          xs={charts.xs}
          lines={charts.deliveries}
          unit="/min"
          withDay={withDay}
          test="chart-deliveries"
        />
        <Chart title="Backlog" xs={charts.xs} lines={charts.backlog} unit="" withDay={withDay} test="chart-backlog" />
        <Chart title="Oldest pending age (seconds)" xs={charts.xs} lines={charts.age} unit=" s" withDay={withDay} test="chart-age" />
      </div>
    </>
  );
}
