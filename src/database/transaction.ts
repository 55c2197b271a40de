import type { PoolClient, QueryResult } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';

/** What a transaction opened by transactionWithAfterCommit keeps beside its EntityManager. */
interface Transaction {
  client: PoolClient;
  beforeCommit: (() => void)[];
  afterCommit: (() => void)[];
  /** Statements sent without waiting for their answer, in the order sent: the first failure is the cause. */
  sent: Sent[];
  /** The COMMIT is on its way: nothing more may be sent in this transaction. */
  closing: boolean;
}

interface Sent {
  answer: Promise<unknown>;
  /** Set as soon as the statement failed, even on the client before it was sent (a value that would not bind). */
  failure?: { error: unknown };
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
 * Runs `fn` once the transaction's work is done, just before its COMMIT is sent, unless a
 * statement has failed already: what it sends with sendIn leaves in the COMMIT's write and
 * sees the transaction's final state (a rolled-back savepoint's rows are gone), at no extra
 * round trip. Its answers are in when afterCommit callbacks run.
 */
export function beforeCommit(tx: EntityManager, fn: () => void): void {
  transactionOf(tx).beforeCommit.push(fn);
}

/**
 * Sends a statement in the transaction of `tx` as a named prepared statement (parsed and planned
 * once per connection), without waiting for its answer: it leaves with whatever else this turn
 * sends, at the latest with the COMMIT. A caller that needs the answer awaits the returned promise
 * (the order lock). If it fails, the transaction fails (PostgreSQL turns the COMMIT into a
 * rollback, and transactionWithAfterCommit throws the failure, through `mapError` if given) even
 * if nobody waits for it. So a statement nobody waits for must need no check in code: a condition
 * that must hold is asserted in the SQL itself (expect_rows), where a failure aborts the
 * transaction before the COMMIT.
 */
export function sendIn<R>(
  tx: EntityManager,
  query: { name: string; text: string; values: unknown[] },
  mapError?: (error: unknown) => unknown,
): Promise<R[]> {
  const t = transactionOf(tx);
  if (t.closing) throw new Error(`${query.name}: sent after the transaction's COMMIT`);
  corkTurn(t.client);
  const sent: Sent = { answer: Promise.resolve() };
  // The callback form: a statement that fails on the client (a value that does not bind) is
  // marked failed before sendIn returns, so the transaction cannot send its COMMIT after it.
  const answer = new Promise<R[]>((resolve, reject) => {
    t.client.query(query, (error: Error | null, result: QueryResult) => {
      if (!error) return resolve(result.rows as R[]);
      const mapped = mapError ? mapError(error) : error;
      sent.failure ??= { error: mapped };
      reject(mapped);
    });
  });
  // Handled here: a caller may never wait for it, and the failure surfaces from the transaction.
  answer.catch(() => undefined);
  sent.answer = answer;
  t.sent.push(sent);
  return answer;
}

/**
 * Waits for every statement sent so far with sendIn; throws the first failure. Before a
 * savepoint's release; and before its rollback (the failure then caught), so that what the
 * savepoint undid no longer counts against the transaction.
 */
export async function settle(tx: EntityManager): Promise<void> {
  const t = transactionOf(tx);
  const sent = t.sent.splice(0);
  for (const s of sent) await s.answer;
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
  const t: Transaction = { client, beforeCommit: [], afterCommit: [], sent: [], closing: false };
  open.set(tx, t);
  try {
    corkTurn(client);
    const begun = client.query('BEGIN');
    begun.catch(() => undefined);
    t.sent.push({ answer: begun });
    markActive(runner, true);
    let result: T;
    try {
      result = await work(tx);
      // One that failed already (even on the client, never sent): no COMMIT of the rest.
      throwFirstFailure(t);
      for (const fn of t.beforeCommit.splice(0)) fn();
      throwFirstFailure(t);
      t.closing = true;
      corkTurn(client);
      const committed = client.query('COMMIT');
      committed.catch(() => undefined);
      const answers = await Promise.allSettled(t.sent.splice(0).map((s) => s.answer));
      // A statement that failed in PostgreSQL made it answer the COMMIT with a rollback: the first failure is the outcome.
      if ((await committed).command !== 'COMMIT') {
        const first = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
        throw first ? first.reason : new Error('the transaction was rolled back');
      }
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

function throwFirstFailure(t: Transaction): void {
  const failed = t.sent.find((s) => s.failure);
  if (failed) throw failed.failure!.error;
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
