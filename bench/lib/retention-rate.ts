import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RetentionResult, RetentionService } from '../../src/retention/retention.service';
import { AgedParams, buildHistory } from './aged';
import { BenchServer, migrate, withClient, withDatabase } from './database';
import { machineBusyMs, postgresCpuMs } from './service';
import { round } from './stats';
import { payload } from './stripe-payload';

/**
 * `--only=retention-rate` (issue 38: "retention keeps up with at least 10,000 events/s of inflow"): how
 * fast the retention job clears expired events with its default settings, beside the floor, a plain
 * DELETE loop over the same rows, each on its own copy of one fill.
 *
 * The fill: a day of events as the aged history makes them (bench/lib/aged.ts: 80% payments done with
 * their order, transition, two delivered outbox entries and their attempts, 19.9% ignored, 0.1%
 * quarantined, an attempt each, every payload in its day's partition, the day's audit rows and
 * reconciliation runs), ending PAST_EVERY_WINDOW_DAYS ago: every row of it is due for every default
 * window, so each event's whole lifecycle is cleared once, as steady state clears it over 400 days.
 */
export const PAST_EVERY_WINDOW_DAYS = 402;

/** The tables the fill writes, and what a run must leave of them: nothing. */
const TABLES = [
  'webhook_inbox',
  'webhook_inbox_attempts',
  'webhook_inbox_payloads',
  'outbox',
  'outbox_attempts',
  'orders',
  'order_transitions',
  'admin_audit',
  'reconciliation_runs',
] as const;

export interface RetentionFill {
  /** The filled database, copied (CREATE DATABASE ... TEMPLATE) for every measured pass. */
  template: string;
  events: number;
  rows: Record<string, number>;
  bytes: number;
  buildSeconds: number;
  drop(): Promise<void>;
}

/** What one pass cost, from a checkpoint to its last statement. */
export interface ClearingCost {
  seconds: number;
  /** WAL bytes (pg_current_wal_lsn range), and of them full-page images (pg_walinspect, when its WAL is still there). */
  walBytes: number;
  fpiBytes?: number;
  /** The WAL's largest record kinds (resource manager/record type: bytes), when pg_walinspect could read it. */
  walBy?: string;
  cpuMs: { client: number; postgres: number; machine: number };
  /** The machine's 1-minute load average before and after (2 shared cores: others' work shows here). */
  load: [number, number];
  /** Rows left in the fill's tables (each must be 0). */
  left: Record<string, number>;
}

/** A pass, and the VACUUM of the fill's tables right after it (what autovacuum then does; after a checkpoint too). */
interface Vacuumed {
  vacuum: ClearingCost;
}

export interface JobPass extends ClearingCost, Vacuumed {
  runs: number;
  /** Time inside runOnce, without the scheduler's pauses between runs. */
  busySeconds: number;
  totals: Partial<Record<keyof RetentionResult, number>>;
  batchSize: number;
  maxBatches: number;
  followUpMs: number;
}

export interface FloorPass extends ClearingCost, Vacuumed {
  statements: number;
  deleted: Record<string, number>;
  partitionsDropped: number;
}

const countsOf = (url: string): Promise<Record<string, number>> =>
  withClient(url, async (c) => {
    const { rows } = await c.query(`SELECT ${TABLES.map((t) => `(SELECT count(*)::int FROM ${t}) AS ${t}`).join(', ')}`);
    return rows[0] as Record<string, number>;
  });

/** Builds the fill of `events` expired events in a database of its own on `server`. */
export async function retentionFill(server: BenchServer, events: number, log: (line: string) => void): Promise<RetentionFill> {
  const template = `wi_bench_retention_${randomBytes(4).toString('hex')}`;
  await withClient(server.url, (c) => c.query(`CREATE DATABASE ${template}`));
  const url = withDatabase(server.url, template);
  const drop = () => withClient(server.url, (c) => c.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)).then(() => undefined);
  try {
    await migrate(url);
    // Copied into every pass's database: the WAL inspection needs no extension in the server's own databases.
    await withClient(url, (c) => c.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect')).catch(() => log('pg_walinspect not available'));
    const params: AgedParams = { days: 1, rate: events / 86_400, events, payloadDays: 1, database: template };
    const started = performance.now();
    await withClient(url, (c) => buildHistory(c, params, payload('evt_SPLIT', 'ORDER_SPLIT'), log, PAST_EVERY_WINDOW_DAYS));
    const buildSeconds = (performance.now() - started) / 1000;
    // Autovacuum off on the copies' tables: whether it happened to start inside a 15-second pass moved a pass's
    // WAL by up to 17% and its time more. The VACUUM it would run is measured after each pass instead.
    await withClient(url, async (c) => {
      const { rows: tables } = await c.query(
        `SELECT oid::regclass::text AS name FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace`,
      );
      for (const t of tables)
        await c.query(`ALTER TABLE ${t.name as string} SET (autovacuum_enabled = off, toast.autovacuum_enabled = off)`);
    });
    const rows = await countsOf(url);
    const bytes = await withClient(url, async (c) => Number((await c.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b));
    return { template, events, rows, bytes, buildSeconds, drop };
  } catch (error) {
    await drop();
    throw error;
  }
}

/** A copy of the fill (files copied, not WAL-logged: the copy writes no WAL the pass would count). */
async function copyOf(server: BenchServer, fill: RetentionFill): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${fill.template}_${randomBytes(3).toString('hex')}`;
  await withClient(server.url, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${fill.template} STRATEGY FILE_COPY`));
  return {
    url: withDatabase(server.url, name),
    drop: () => withClient(server.url, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Runs `work` right after a checkpoint (its first change of each page writes the whole page, as in production) and measures it. */
async function measured<T>(url: string, work: () => Promise<T>): Promise<{ result: T; cost: ClearingCost }> {
  await withClient(url, (c) => c.query('CHECKPOINT'));
  const lsn = await withClient(url, async (c) => (await c.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string);
  const before = { client: process.cpuUsage(), postgres: postgresCpuMs(), machine: machineBusyMs() };
  const loadBefore = loadavg()[0];
  const started = performance.now();
  const result = await work();
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(before.client);
  const cpuMs = {
    client: (client.user + client.system) / 1000,
    postgres: postgresCpuMs() - before.postgres,
    machine: machineBusyMs() - before.machine,
  };
  const load: [number, number] = [loadBefore, loadavg()[0]];
  const wal = await withClient(url, async (c) => {
    const {
      rows: [r],
    } = await c.query(`SELECT (pg_current_wal_lsn() - $1::pg_lsn)::float8 AS bytes`, [lsn]);
    try {
      const { rows: kinds } = await c.query(
        `SELECT "resource_manager/record_type" AS kind, record_size::float8 AS record, fpi_size::float8 AS fpi, combined_size::float8 AS bytes
           FROM pg_get_wal_stats($1::pg_lsn, pg_current_wal_lsn(), true) WHERE count > 0 ORDER BY combined_size DESC`,
        [lsn],
      );
      const fpiBytes = kinds.reduce((sum, k) => sum + Number(k.fpi), 0);
      const walBy = kinds
        .slice(0, 5)
        .map((k) => `${k.kind} ${round(k.bytes / 1e6, 1)} MB (${round((100 * k.fpi) / Math.max(k.bytes, 1), 0)}% full pages)`)
        .join(', ');
      return { bytes: Number(r.bytes), fpiBytes, walBy };
    } catch {
      // No pg_walinspect, or the WAL already recycled (the stage's server keeps 4 GB of it).
      return { bytes: Number(r.bytes) };
    }
  });
  return {
    result,
    cost: {
      seconds,
      walBytes: wal.bytes,
      fpiBytes: wal.fpiBytes,
      walBy: wal.walBy,
      cpuMs,
      load,
      left: await countsOf(url),
    },
  };
}

/**
 * The product: the application's own RetentionService (src/, every module as `createApp` builds it, role
 * `api` so no scheduler of its own runs), its settings the defaults (BENCH_SERVICE_ENV may try others).
 * runOnce back to back until a run is not capped, with the scheduler's pause (CAPPED_FOLLOW_UP_MS)
 * after each capped run, as RetentionScheduler follows a capped run.
 */
export async function clearWithJob(server: BenchServer, fill: RetentionFill): Promise<JobPass> {
  const { createApp } = await import('../../src/app.factory');
  const { loadConfig } = await import('../../src/config/load-config');
  const { RetentionService: Service } = await import('../../src/retention/retention.service');
  const { CAPPED_FOLLOW_UP_MS } = await import('../../src/retention/maintenance-job.scheduler');
  const db = await copyOf(server, fill);
  const endpointsFile = join(mkdtempSync(join(tmpdir(), 'wi-bench-retention-')), 'endpoints.json');
  writeFileSync(endpointsFile, JSON.stringify({ endpoints: [] }));
  const config = loadConfig({
    NODE_ENV: 'development',
    DATABASE_URL: db.url,
    WEBHOOK_ENDPOINTS_FILE: endpointsFile,
    ROLES: 'api',
    ADMIN_TOKENS: `bench:operator:${randomBytes(16).toString('hex')}`,
    ...(JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>),
  });
  const app = await createApp(config, { logger: false });
  try {
    await app.init();
    const retention: RetentionService = app.get(Service);
    const { result, cost } = await measured(db.url, async () => {
      const totals: Partial<Record<keyof RetentionResult, number>> = {};
      let runs = 0;
      let busyMs = 0;
      for (;;) {
        const started = performance.now();
        const run = await retention.runOnce();
        busyMs += performance.now() - started;
        runs++;
        for (const [key, value] of Object.entries(run) as [keyof RetentionResult, number | boolean][])
          if (typeof value === 'number') totals[key] = (totals[key] ?? 0) + value;
        if (!run.capped) return { runs, busySeconds: busyMs / 1000, totals };
        if (runs > 10_000) throw new Error('retention-rate: the job was still capped after 10,000 runs');
        await new Promise((r) => setTimeout(r, CAPPED_FOLLOW_UP_MS));
      }
    });
    return {
      ...cost,
      ...result,
      vacuum: await vacuumAfter(db.url),
      batchSize: retention.batchSize,
      maxBatches: retention.maxBatches,
      followUpMs: CAPPED_FOLLOW_UP_MS,
    };
  } finally {
    await app.close();
    await db.drop();
  }
}

/**
 * The floor: the same rows deleted by a plain loop from one connection, in statements of `batch`
 * rows, each `DELETE FROM t WHERE id IN (SELECT id FROM t WHERE id > <the last batch's last id>
 * ORDER BY id LIMIT batch)`, a row's children (attempts, transitions) deleted by the same statement
 * as the job does; the payload days dropped whole (DROP TABLE of each partition). Everything in
 * the fill is due, so no predicate is needed: no time or status filter, no order by time, no row
 * locks (FOR UPDATE SKIP LOCKED), no concurrent detach, no pause. What deleting these rows costs
 * PostgreSQL here at this batch size; the job's distance from it is what its own choices cost.
 */
export async function clearWithFloor(server: BenchServer, fill: RetentionFill, batch: number): Promise<FloorPass> {
  const db = await copyOf(server, fill);
  try {
    const { result, cost } = await measured(db.url, () =>
      withClient(db.url, async (c) => {
        const deleted: Record<string, number> = {};
        let statements = 0;
        const loop = async (table: string, sql: string, start: string[]) => {
          for (let after = start; ;) {
            const {
              rows: [r],
            } = await c.query(sql, [...after, batch]);
            statements++;
            deleted[table] = (deleted[table] ?? 0) + r.n;
            if (r.n < batch) return;
            after = r.last as string[];
          }
        };
        await loop('webhook_inbox', byId('webhook_inbox', 'DELETE FROM webhook_inbox_attempts WHERE inbox_id IN (SELECT id FROM gone)'), [
          '0',
        ]);
        const { rows: days } = await c.query(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'webhook_inbox_payloads'::regclass AND substr(c.relname, 24) < to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')`,
        );
        for (const day of days) {
          await c.query(`DROP TABLE ${day.name as string}`);
          statements++;
        }
        await loop('outbox', byId('outbox', 'DELETE FROM outbox_attempts WHERE outbox_id IN (SELECT id FROM gone)'), ['0']);
        await loop('orders', FLOOR_ORDERS, ['', '']);
        await loop('admin_audit', byId('admin_audit'), ['0']);
        await loop('reconciliation_runs', byId('reconciliation_runs'), ['0']);
        return { statements, deleted, partitionsDropped: days.length };
      }),
    );
    return { ...cost, ...result, vacuum: await vacuumAfter(db.url) };
  } finally {
    await db.drop();
  }
}

/** The VACUUM of the fill's tables (autovacuum is off on them), right after a checkpoint. */
async function vacuumAfter(url: string): Promise<ClearingCost> {
  return (await measured(url, () => withClient(url, (c) => c.query(`VACUUM ${TABLES.join(', ')}`)))).cost;
}

/** One floor batch over `table` by its bigint id, after id $1, and `children` deleted by the same statement. */
function byId(table: string, children?: string): string {
  return `
  WITH gone AS (
    DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE id > $1::bigint ORDER BY id LIMIT $2)
    RETURNING id
  )${children ? `, children AS (${children})` : ''}
  SELECT count(*)::int AS n, ARRAY[max(id)::text] AS last FROM gone`;
}

/** Orders by their primary key (tenant_id, id), with their transitions. */
const FLOOR_ORDERS = `
  WITH gone AS (
    DELETE FROM orders
     WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM orders WHERE (tenant_id, id) > ($1::text, $2::text) ORDER BY tenant_id, id LIMIT $3)
    RETURNING tenant_id, id
  ), children AS (
    DELETE FROM order_transitions t USING gone g WHERE t.tenant_id = g.tenant_id AND t.order_id = g.id
  )
  SELECT count(*)::int AS n, (SELECT ARRAY[tenant_id, id] FROM gone ORDER BY tenant_id DESC, id DESC LIMIT 1) AS last FROM gone`;

/** A pass's costs per event, for a row's notes. */
export function describeClearing(cost: ClearingCost, events: number): string {
  const us = (ms: number) => round((ms * 1000) / events, 1);
  const left = Object.entries(cost.left).filter(([, n]) => n > 0);
  return (
    `WAL ${round(cost.walBytes / events, 0)} B per event` +
    (cost.fpiBytes === undefined ? '' : ` (${round(cost.fpiBytes / events, 0)} B of it full-page images)`) +
    (cost.walBy ? `, largest: ${cost.walBy}` : '') +
    `; CPU per event: bench process ${us(cost.cpuMs.client)} us, PostgreSQL ${us(cost.cpuMs.postgres)} us, ` +
    `the whole machine busy ${us(cost.cpuMs.machine)} us; ` +
    `load average ${round(cost.load[0], 1)} -> ${round(cost.load[1], 1)}; ` +
    (left.length ? `LEFT: ${left.map(([t, n]) => `${t} ${n}`).join(', ')}` : 'nothing left')
  );
}
