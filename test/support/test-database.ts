import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { withDatabase } from './global-setup';

export interface TestDatabase {
  url: string;
  /** A plain pg client for assertions on rows. */
  query<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

/** A fresh, migrated database of this test file's own, copied from the run's template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const server = process.env.TEST_SERVER_URL!;
  const name = `wi_test_${process.env.TEST_RUN_ID}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_TEMPLATE_DB}`);
  await admin.end();

  const url = withDatabase(server, name);
  const client = new Client({ connectionString: url });
  await client.connect();
  return {
    url,
    query: async (sql, params) => (await client.query(sql, params as any[])).rows,
    drop: async () => {
      await client.end();
      const dropper = new Client({ connectionString: server });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}

/** A database of the describe block's own: created before its tests, dropped after; `use` receives it. */
export function useTestDatabase(use: (db: TestDatabase) => void): void {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    use(db);
  });
  afterAll(() => db?.drop());
}

/** A plan node of EXPLAIN (FORMAT JSON), with the fields the plan tests read. */
export type PlanNode = Record<string, any> & { Plans?: PlanNode[] };

/**
 * Every node of `statement`'s plan as it runs (EXPLAIN ANALYZE, in a transaction rolled
 * back), its parameters $1, $2, ... replaced by the SQL `literals` (literals[0] unused),
 * so that the plan is the one PostgreSQL makes for those values.
 */
export async function planNodes(db: TestDatabase, statement: string, literals: string[]): Promise<PlanNode[]> {
  const sql = statement.replace(/\$(\d+)/g, (_, n: string) => literals[Number(n)]);
  await db.query('BEGIN');
  try {
    const [plan] = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`);
    const nodes: PlanNode[] = [];
    const walk = (node: PlanNode) => {
      nodes.push(node);
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(plan['QUERY PLAN'][0].Plan);
    return nodes;
  } finally {
    await db.query('ROLLBACK');
  }
}
