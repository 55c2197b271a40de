import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Pool } from 'undici';
import { signRequest } from '../../src/cli/sign-request';
import { BenchServer, freshDatabase, withClient } from './database';
import { BENCH_STRIPE_SECRET, postgresCpuMs, startService } from './service';
import { payload } from './stripe-payload';
import { round, summarize } from './stats';

/** The flood: this many bad signatures in FLOOD_SECONDS, beside valid requests at VALID_PER_SECOND. */
export const FLOOD_REQUESTS = 10_000;
export const FLOOD_SECONDS = 60;
export const VALID_PER_SECOND = 50;

export interface FloodVariant {
  label: string;
  env: Record<string, string>;
}

export const LOG_OFF: FloodVariant = { label: 'log off (REJECTION_LOG_PER_MINUTE=0)', env: { REJECTION_LOG_PER_MINUTE: '0' } };
export const LOG_ON: FloodVariant = { label: 'log on (defaults: 60 per endpoint and minute)', env: {} };
/** What the bound buys: every rejection kept (the log's largest setting). */
export const LOG_ALL: FloodVariant = {
  label: 'log unbounded (REJECTION_LOG_PER_MINUTE=60000)',
  env: { REJECTION_LOG_PER_MINUTE: '60000' },
};

export interface FloodResult {
  variant: FloodVariant;
  valid: { p50: number; p99: number; ok: number; sent: number };
  rejected: number;
  /** Rows and bytes of webhook_rejections (heap, indexes, TOAST) after the flood. */
  rows: number;
  tableBytes: number;
  /** WAL written during the stage (the valid requests' inserts included, alike in every variant). */
  walBytes: number;
  serviceCpuMs: number;
  postgresCpuMs: number;
  /** The machine's 1-minute load average at the end (2 shared cores: others' work shows here). */
  load: number;
}

/**
 * FLOOD_REQUESTS requests with a wrong signature over FLOOD_SECONDS (about 167 a second), paced,
 * while valid requests arrive at VALID_PER_SECOND on their own connections: the valid ones'
 * latency, and what the rejected-request log wrote, for one variant of its settings.
 */
export async function rejectionFlood(server: BenchServer, variant: FloodVariant, seconds = FLOOD_SECONDS): Promise<FloodResult> {
  const db = await freshDatabase(server);
  const service = await startService(db.url, { ROLES: 'api', ...variant.env });
  const origin = service.url;
  const valid = new Pool(origin, { connections: 16, pipelining: 1 });
  const hostile = new Pool(origin, { connections: 32, pipelining: 1 });
  try {
    // Warm-up: the JIT and the pool's connections, before the clock.
    await paced(
      valid,
      200,
      Array.from({ length: 400 }, (_, i) => signRequest('stripe', BENCH_STRIPE_SECRET, payload(`evt_warm_${i}`, `w${i}`))),
    );
    const flood = Math.round((FLOOD_REQUESTS * seconds) / FLOOD_SECONDS);
    // Signed before the clock starts: signing 13,000 requests would otherwise delay the first ones' schedule.
    const goodRequests = Array.from({ length: VALID_PER_SECOND * seconds }, (_, i) =>
      signRequest('stripe', BENCH_STRIPE_SECRET, payload(`evt_${randomBytes(8).toString('hex')}_${i}`, `o${i}`)),
    );
    const badRequests = Array.from({ length: flood }, (_, i) =>
      signRequest('stripe', 'whsec_not_the_endpoint_secret', payload(`evt_bad_${i}`, `b${i}`)),
    );
    const walBefore = await walLsn(db.url);
    const cpu = { service: service.cpuMs(), postgres: postgresCpuMs() };
    const [good, bad] = await Promise.all([paced(valid, VALID_PER_SECOND, goodRequests), paced(hostile, flood / seconds, badRequests)]);
    // The log writes once a second, off the request path: let its last batch land.
    await new Promise((r) => setTimeout(r, 2_500));
    const serviceCpuMs = service.cpuMs() - cpu.service;
    const pgCpuMs = postgresCpuMs() - cpu.postgres;
    const walBytes = (await walLsn(db.url)) - walBefore;
    const stored = await withClient(db.url, async (c) => {
      const { rows } = await c.query(
        `SELECT (SELECT count(*)::int FROM webhook_rejections) AS n, pg_total_relation_size('webhook_rejections')::bigint AS bytes`,
      );
      return rows[0] as { n: number; bytes: string };
    });
    const { p50, p99 } = summarize(good.latencies);
    return {
      variant,
      valid: { p50, p99, ok: good.statuses.filter((s) => s === 200).length, sent: good.statuses.length },
      rejected: bad.statuses.filter((s) => s === 401).length,
      rows: stored.n,
      tableBytes: Number(stored.bytes),
      walBytes,
      serviceCpuMs,
      postgresCpuMs: pgCpuMs,
      load: loadavg()[0],
    };
  } finally {
    await valid.close();
    await hostile.close();
    await service.stop();
    await db.drop();
  }
}

/** Sends `requests` at `rate` a second (open loop: the schedule does not wait for answers). */
async function paced(
  pool: Pool,
  rate: number,
  requests: { headers: Record<string, string>; body: string }[],
): Promise<{ latencies: number[]; statuses: number[] }> {
  const count = requests.length;
  const latencies: number[] = [];
  const statuses: number[] = [];
  const inflight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const { headers, body } = requests[i];
    const sent = performance.now();
    inflight.push(
      pool.request({ method: 'POST', path: '/webhooks/stripe-acme', headers, body }).then(async (res) => {
        await res.body.text();
        latencies.push(performance.now() - sent);
        statuses.push(res.statusCode);
      }),
    );
  }
  await Promise.all(inflight);
  return { latencies, statuses };
}

async function walLsn(url: string): Promise<number> {
  return withClient(url, async (c) => {
    const { rows } = await c.query(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS lsn`);
    return Number(rows[0].lsn);
  });
}

export function describeFlood(r: FloodResult): string {
  return (
    `valid: p50 ${r.valid.p50} ms, p99 ${r.valid.p99} ms (${r.valid.ok}/${r.valid.sent} accepted); ` +
    `${r.rejected} rejected; log: ${r.rows} rows, ${round(r.tableBytes / 1024, 0)} KiB (table and indexes); ` +
    `WAL of the stage ${round(r.walBytes / 1024 / 1024, 2)} MiB; CPU: service ${round(r.serviceCpuMs / 1000, 1)} s, PostgreSQL ${round(r.postgresCpuMs / 1000, 1)} s; load average ${round(r.load, 1)}`
  );
}
