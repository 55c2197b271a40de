import type { PoolClient, QueryResult } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';

/** What a transaction opened by transactionWithAfterCommit keeps beside its EntityManager. */
interface Transaction {
  client: PoolClient;
  afterCommit: (() => void)[];
  /** Statements sent without waiting for their answer, in the order sent: the first failure is the cause. */
  sent: Promise<unknown>[];
}

const open = new WeakMap<EntityManager, Transaction>();
const corked = new WeakSet<PoolClient>();

/**
 * Holds back every statement `client` is given until the end of this turn of the event loop, so
 * the statements one step of the code issues leave in one write and come back in one round trip
 * (the pool's connections run in pipeline mode, see data-source.ts). Each round trip costs both
 * processes a wake-up and a few socket calls: at moderate rates that, not the SQL, is most of the cost.
 */
function corkTurn(client: PoolClient): void {
  if (corked.has(client)) return;
  const stream = (client as unknown as { connection: { stream: NodeJS.WritableStream & { cork(): void; uncork(): void } } }).connection.stream;
  corked.add(client);
  stream.cork();
  setImmediate(() => {
    corked.delete(client);
    stream.uncork();
  });
}

/**
 * Runs `fn` after the transaction of `tx` commits, and never if it rolls back;
 * use it for wake-ups and other hints whose loss only delays work. Only a
 * transaction opened by `transactionWithAfterCommit` runs callbacks, so any other
 * `tx` is a programming error, not a hint to drop silently.
 */
export function afterCommit(tx: EntityManager, fn: () => void): void {
  transactionOf(tx).afterCommit.push(fn);
}

/**
 * Sends a statement in the transaction of `tx` without waiting for its answer: it leaves with
 * whatever else this turn sends, at the latest with the COMMIT. If it fails, the transaction
 * fails (PostgreSQL turns the COMMIT into a rollback, and transactionWithAfterCommit throws the
 * failure, through `mapError` if given) even if nobody waits for the returned promise. So only
 * for statements whose success needs no check in code: a condition that must hold is asserted in
 * the SQL itself (expect_rows), where a failure aborts the transaction before the COMMIT.
 */
export function sendIn<R>(
  tx: EntityManager,
  query: { name: string; text: string; values: unknown[] },
  mapError?: (error: unknown) => unknown,
): Promise<R[]> {
  const t = transactionOf(tx);
  corkTurn(t.client);
  const answer = t.client.query(query).then(
    (result: QueryResult) => result.rows as R[],
    (error: unknown) => Promise.reject(mapError ? mapError(error) : error),
  );
  // Handled here: a caller may never wait for it, and the failure surfaces from the transaction.
  answer.catch(() => undefined);
  t.sent.push(answer);
  return answer;
}

/** Waits for every statement sent so far with sendIn; throws the first failure (before a savepoint's release, say). */
export async function settle(tx: EntityManager): Promise<void> {
  const t = transactionOf(tx);
  const sent = t.sent.splice(0);
  for (const answer of sent) await answer;
}

/**
 * A transaction in as few round trips as its statements allow: BEGIN leaves with the first
 * statement, and the COMMIT with the statements sent by sendIn in the last step, in one write
 * (pipelined: PostgreSQL runs them in order, and after a failure the COMMIT rolls back). Callbacks
 * registered with afterCommit run once it has committed. `tx` is a TypeORM EntityManager like any
 * other: a handler's own tx.query() calls, and nested tx.transaction() savepoints, work as usual.
 */
export async function transactionWithAfterCommit<T>(dataSource: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner();
  const client = (await runner.connect()) as PoolClient;
  const tx = runner.manager;
  const t: Transaction = { client, afterCommit: [], sent: [] };
  open.set(tx, t);
  try {
    corkTurn(client);
    const begun = client.query('BEGIN');
    begun.catch(() => undefined);
    t.sent.push(begun);
    markActive(runner, true);
    let result: T;
    try {
      result = await work(tx);
      corkTurn(client);
      const committed = client.query('COMMIT');
      committed.catch(() => undefined);
      // A failed statement made PostgreSQL answer the COMMIT with a rollback: its error is the outcome.
      await settle(tx);
      await committed;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      markActive(runner, false);
    }
    for (const fn of t.afterCommit) {
      try {
        fn();
      } catch {
        // A failed hint must not turn a committed transaction into an error.
      }
    }
    return result;
  } finally {
    open.delete(tx);
    await runner.release();
  }
}

function transactionOf(tx: EntityManager): Transaction {
  const t = open.get(tx);
  if (!t) throw new Error('afterCommit and sendIn need a transaction opened by transactionWithAfterCommit');
  return t;
}

/** TypeORM's view of the runner: in a transaction of depth 1, so a nested tx.transaction() takes a savepoint. */
function markActive(runner: QueryRunner, active: boolean): void {
  const state = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
  state.isTransactionActive = active;
  state.transactionDepth = active ? 1 : 0;
}
