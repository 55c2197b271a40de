import { existsSync, readFileSync } from 'node:fs';
import { withClient } from './database';
import { round } from './stats';

/** What one stage cost PostgreSQL's storage, per unit of work (event, request, delivery). */
export interface StorageCost {
  walBytes: number;
  /** Full-page images: a page's first change after a checkpoint writes the whole page to the WAL. */
  fpi: number;
  /** Pages the stage's statements did not find in shared_buffers (read from the OS: its page cache or the disk). */
  blksRead: number;
  /** Pages read from storage: the squeezed server's own (/proc/<pid>/io of its processes), else reads of the machine's disks (/proc/diskstats, every process). */
  diskReads: number;
  /** PostgreSQL's execution time of the accept INSERT per row inserted, when the stage ran it. */
  acceptUsPerRow?: number;
  /** The relations whose pages made most of the full-page images, with their share per unit. */
  fpiBy: string;
}

/** Reads completed by the machine's block devices (whole disks, not partitions), from /proc/diskstats. */
function diskReadsSoFar(): number {
  let total = 0;
  for (const line of readFileSync('/proc/diskstats', 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length > 5 && !/^(loop|ram|zram)/.test(f[2]) && existsSync(`/sys/block/${f[2]}`)) total += Number(f[3]);
  }
  return total;
}

/**
 * Brackets a stage's timed part: the WAL it wrote (pg_walinspect over the LSN range, so exact and
 * independent of when backends flush their statistics), and its statements' buffer misses and the
 * accept INSERT's time (pg_stat_statements, reset at start). Needs both extensions on the server, which
 * `--aged` loads; the WAL between the two LSNs is kept by wal_keep_size.
 */
export class StorageProbe {
  private constructor(
    private readonly serverUrl: string,
    private readonly databaseUrl: string,
    private readonly lsn: string,
    private readonly disk: number,
    private readonly diskReads: () => number,
  ) {}

  static async prepare(serverUrl: string): Promise<void> {
    await withClient(serverUrl, async (c) => {
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    });
  }

  /** `diskReads`: the machine's by default; the squeezed server's own when it has a cgroup. */
  static async start(serverUrl: string, databaseUrl: string, diskReads: () => number = diskReadsSoFar): Promise<StorageProbe> {
    const lsn = await withClient(serverUrl, async (c) => {
      await c.query('SELECT pg_stat_statements_reset()');
      return (await c.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string;
    });
    return new StorageProbe(serverUrl, databaseUrl, lsn, diskReads(), diskReads);
  }

  async finish(units: number): Promise<StorageCost> {
    const diskReads = this.diskReads() - this.disk;
    const database = new URL(this.databaseUrl).pathname.slice(1);
    return withClient(this.serverUrl, async (c) => {
      const {
        rows: [wal],
      } = await c.query(
        `SELECT (pg_current_wal_lsn() - $1::pg_lsn)::float8 AS bytes,
                (SELECT count(*) FROM pg_get_wal_block_info($1::pg_lsn, pg_current_wal_lsn(), false) WHERE block_fpi_length > 0)::float8 AS fpi`,
        [this.lsn],
      );
      // The accept statement (its payload rows in a CTE beside it since payload days, issue 38).
      const {
        rows: [st],
      } = await c.query(
        `SELECT coalesce(sum(shared_blks_read), 0)::float8 AS read,
                sum(total_exec_time) FILTER (WHERE query ~ '^\\s*(WITH accepted AS \\(\\s*)?INSERT INTO webhook_inbox AS i') AS accept_ms,
                sum(rows) FILTER (WHERE query ~ '^\\s*(WITH accepted AS \\(\\s*)?INSERT INTO webhook_inbox AS i')::float8 AS accept_rows
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [database],
      );
      const { rows: byFile } = await c.query(
        `SELECT relfilenode::int AS file, count(*)::float8 AS fpi FROM pg_get_wal_block_info($1::pg_lsn, pg_current_wal_lsn(), false)
          WHERE block_fpi_length > 0 AND reldatabase = (SELECT oid FROM pg_database WHERE datname = $2)
          GROUP BY 1 ORDER BY 2 DESC LIMIT 4`,
        [this.lsn, database],
      );
      const names = await withClient(
        this.databaseUrl,
        async (d) =>
          new Map(
            (
              await d.query('SELECT relfilenode::int AS file, relname FROM pg_class WHERE relfilenode = ANY($1)', [
                byFile.map((r) => r.file),
              ])
            ).rows.map((r) => [r.file, r.relname]),
          ),
      );
      return {
        fpiBy: byFile.map((r) => `${names.get(r.file) ?? r.file} ${round(r.fpi / units, 3)}`).join(', '),
        walBytes: round(wal.bytes / units, 0),
        fpi: round(wal.fpi / units, 3),
        blksRead: round(st.read / units, 3),
        diskReads: round(diskReads / units, 3),
        acceptUsPerRow: st.accept_rows > 0 ? round((st.accept_ms * 1000) / st.accept_rows, 1) : undefined,
      };
    });
  }
}

export function describeCost(cost: StorageCost, unit: string): string {
  return (
    `per ${unit}: WAL ${cost.walBytes} B, ${cost.fpi} full-page images${cost.fpiBy ? ` (${cost.fpiBy})` : ''}, ${cost.blksRead} buffer misses, ${cost.diskReads} disk reads` +
    (cost.acceptUsPerRow === undefined ? '' : `; accept INSERT ${cost.acceptUsPerRow} us per row`)
  );
}
