import type { UnitOfWork } from './unit-of-work';

/** Rows a transaction has inserted, updated and deleted so far in one table. */
export interface TableWrites {
  inserted: number;
  updated: number;
  deleted: number;
}

/**
 * What the current transaction has written so far, by table, from PostgreSQL's own
 * per-transaction counters (pg_stat_xact_user_tables): whatever code ran, without
 * knowing its tables. A row an ON CONFLICT DO NOTHING skipped is not counted.
 */
export async function transactionWrites(tx: UnitOfWork): Promise<Record<string, TableWrites>> {
  const rows: { table: string; inserted: number; updated: number; deleted: number }[] = await tx.query(
    `SELECT relname AS table, n_tup_ins::int AS inserted, n_tup_upd::int AS updated, n_tup_del::int AS deleted
       FROM pg_stat_xact_user_tables
      WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
      ORDER BY relname`,
  );
  return Object.fromEntries(rows.map(({ table, ...writes }) => [table, writes]));
}

/** `after` minus `before`, tables with no write left out. */
export function writesSince(before: Record<string, TableWrites>, after: Record<string, TableWrites>): Record<string, TableWrites> {
  const out: Record<string, TableWrites> = {};
  for (const [table, a] of Object.entries(after)) {
    const b = before[table] ?? { inserted: 0, updated: 0, deleted: 0 };
    const d = { inserted: a.inserted - b.inserted, updated: a.updated - b.updated, deleted: a.deleted - b.deleted };
    if (d.inserted || d.updated || d.deleted) out[table] = d;
  }
  return out;
}
