import { withClient } from './database';

/** One statement's share of a stage, from pg_stat_statements. */
export interface StatementShare {
  /** Execution time per unit of work (event, request), in microseconds. */
  usPerUnit: number;
  /** Planning time per unit of work, in microseconds (parse and analysis are in neither). */
  planUsPerUnit: number;
  calls: number;
  rows: number;
  query: string;
}

/**
 * `--statements`: where PostgreSQL's execution time goes, per statement, in one
 * stage. Needs pg_stat_statements loaded at server start, which the bench does
 * for its embedded server; on DATABASE_URL it is used when the server has it.
 * Statistics are server-wide: stages run one at a time, so a reset before the
 * stage and a read after it see that stage alone.
 */
export class StatementStats {
  /** `serverUrl`: the server's maintenance database, where the extension is created once. */
  private constructor(private readonly serverUrl: string | undefined) {}

  static async open(serverUrl: string, wanted: boolean): Promise<StatementStats> {
    if (!wanted) return new StatementStats(undefined);
    try {
      await withClient(serverUrl, (c) => c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements'));
      return new StatementStats(serverUrl);
    } catch (error) {
      process.stderr.write(`--statements: pg_stat_statements is not available (${(error as Error).message}); skipped\n`);
      return new StatementStats(undefined);
    }
  }

  async reset(): Promise<void> {
    if (this.serverUrl) await withClient(this.serverUrl, (c) => c.query('SELECT pg_stat_statements_reset()'));
  }

  /** The statements run in the database at `databaseUrl` since the last reset, by total time: calls, mean and longest call in ms. */
  async slowest(databaseUrl: string, limit = 8): Promise<{ calls: number; mean_ms: number; max_ms: number; query: string }[]> {
    if (!this.serverUrl) return [];
    return withClient(this.serverUrl, async (c) => {
      const { rows } = await c.query(
        `SELECT calls::int, round(mean_exec_time::numeric, 1)::float AS mean_ms, round(max_exec_time::numeric, 1)::float AS max_ms,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 80) AS query
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
          ORDER BY total_exec_time DESC LIMIT $2`,
        [new URL(databaseUrl).pathname.slice(1), limit],
      );
      return rows;
    });
  }

  /** The top statements run in the database at `databaseUrl` since the last reset, per unit of `units`. */
  async top(databaseUrl: string, units: number, limit = 6): Promise<StatementShare[]> {
    if (!this.serverUrl) return [];
    const database = new URL(databaseUrl).pathname.slice(1);
    return withClient(this.serverUrl, async (c) => {
      const { rows } = await c.query(
        // The group-commit insert is prepared once per batch size: its variants count as one statement.
        `SELECT sum(calls)::int AS calls, sum(rows)::int AS rows, sum(total_exec_time) AS ms, sum(total_plan_time) AS plan_ms,
                left(query, 100) AS query
           FROM (SELECT calls, rows, total_exec_time, total_plan_time, regexp_replace(query, '\\s+', ' ', 'g') AS query
                   FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)) s
          GROUP BY 5 ORDER BY 3 DESC LIMIT $2`,
        [database, limit],
      );
      return rows.map((r: { calls: number; rows: number; ms: number; plan_ms: number; query: string }) => ({
        usPerUnit: Math.round((r.ms * 1000) / units),
        planUsPerUnit: Math.round((r.plan_ms * 1000) / units),
        calls: r.calls,
        rows: r.rows,
        query: r.query,
      }));
    });
  }
}
