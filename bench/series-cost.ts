/**
 * The console charts' query cost on a database that holds history (issue 36):
 * EXPLAIN ANALYZE of the series statement for each window, per kind, for all scopes,
 * one scope and one tenant, in alternated rounds; and, as the baseline the rollup
 * replaces, the same buckets counted straight from webhook_inbox and the attempts.
 *
 *   DATABASE_URL=postgres://.../scratch npx ts-node --transpile-only bench/series-cost.ts [rounds]
 *
 * The database is built by the SQL in docs/performance.md ("The console's charts").
 */
import { Client } from 'pg';
import { SERIES_BY_HOUR, SERIES_BY_MINUTE } from '../src/activity/activity.queries';
import { WINDOWS } from '../src/activity/activity.types';

const DIRECT_ACCEPTED = `
  SELECT date_bin(make_interval(secs => $3), received_at, $1) AS bucket, count(*)::int
    FROM webhook_inbox WHERE received_at >= $1 AND received_at < $2 AND ($4::text IS NULL OR endpoint_id = $4) GROUP BY 1`;
const DIRECT_DONE = `
  SELECT date_bin(make_interval(secs => $3), a.at, $1) AS bucket, count(*) FILTER (WHERE a.outcome = 'done')::int
    FROM webhook_inbox_attempts a JOIN webhook_inbox i ON i.id = a.inbox_id
   WHERE a.at >= $1 AND a.at < $2 AND ($4::text IS NULL OR i.endpoint_id = $4) GROUP BY 1`;

/** As ActivityRepository.series: hourly buckets read the hourly rows. */
const seriesOf = (stepSeconds: number) => (stepSeconds >= 3600 ? SERIES_BY_HOUR : SERIES_BY_MINUTE);

async function explain(client: Client, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  return rows[0]['QUERY PLAN'][0]['Execution Time'];
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const client = new Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  const [{ now }] = (await client.query(`SELECT date_trunc('minute', now()) + interval '1 minute' AS now`)).rows;
  const cases: { name: string; run: (from: Date, to: Date, step: number) => Promise<number> }[] = [
    { name: 'series endpoint, all', run: (f, t, s) => explain(client, seriesOf(s), ['endpoint', f, t, null, null, s]) },
    { name: 'series endpoint, one', run: (f, t, s) => explain(client, seriesOf(s), ['endpoint', f, t, 'ep-3', null, s]) },
    { name: 'series endpoint, one tenant', run: (f, t, s) => explain(client, seriesOf(s), ['endpoint', f, t, null, ['globex'], s]) },
    { name: 'series destination, all', run: (f, t, s) => explain(client, seriesOf(s), ['destination', f, t, null, null, s]) },
    { name: 'series destination, one', run: (f, t, s) => explain(client, seriesOf(s), ['destination', f, t, 'dest-2', null, s]) },
  ];
  if (process.env.DIRECT !== '0') {
    cases.push(
      { name: 'direct accepted, all', run: (f, t, s) => explain(client, DIRECT_ACCEPTED, [f, t, s, null]) },
      { name: 'direct done, one endpoint', run: (f, t, s) => explain(client, DIRECT_DONE, [f, t, s, 'ep-3']) },
    );
  }
  const results = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const [window, { ms, stepSeconds }] of Object.entries(WINDOWS)) {
      const from = new Date(now.getTime() - ms);
      for (const c of round % 2 ? [...cases].reverse() : cases) {
        const key = `${window} ${c.name}`;
        results.set(key, [...(results.get(key) ?? []), await c.run(from, now, stepSeconds)]);
      }
    }
  }
  for (const [key, ms] of results) {
    const sorted = [...ms].sort((a, b) => a - b);
    console.log(
      `${key.padEnd(40)} median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, range ${sorted[0].toFixed(1)}-${sorted[sorted.length - 1].toFixed(1)} ms`,
    );
  }
  await client.end();
}

void main();
