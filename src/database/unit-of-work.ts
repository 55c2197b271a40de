import type { PoolClient, QueryResult } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { assertReplicated, forgetReplicationNotice } from './replication-notice';

/** A named statement: parsed and planned once per connection. */
export interface NamedQuery {
  name: string;
  text: string;
  values: unknown[];
}

interface Sent {
  answer: Promise<unknown>;
  /** Set as soon as the statement failed, even on the client before it was sent (a value that would not bind). */
  failure?: { error: unknown };
}

export interface UnitOfWorkOptions {
  /**
   * The trace context of each event this transaction serves, by inbox row id: what
   * the transaction writes for an event (its outbox entries) continues that event's trace.
   */
  traceparents?: ReadonlyMap<string, string>;
}

/**
 * One database transaction, handed explicitly to every use case and handler that
 * works in it. What the transaction does is on this object, and only here:
 * - `query`: a statement whose answer the caller awaits (TypeORM's `query`);
 * - `send`: a statement sent without waiting, pipelined with what follows; if it
 *   fails, the transaction fails, whether or not anyone awaits it;
 * - `beforeCommit` / `afterCommit`: work at the COMMIT's edge;
 * - the trace context of the events it serves, and `local` state a module keeps
 *   for the length of the transaction (the outbox writer's hand-over).
 * Opened by `runInTransaction`, which sends BEGIN with the first statement and the
 * COMMIT with the last ones, in as few round trips as the statements allow.
 */
export class UnitOfWork {
  /** TypeORM's manager of this transaction, for code that wants entities or repositories. */
  readonly manager: EntityManager;
  private readonly beforeCommits: (() => void)[] = [];
  private readonly afterCommits: (() => void)[] = [];
  /** Statements sent without waiting for their answer, in the order sent: the first failure is the cause. */
  private sent: Sent[] = [];
  /** The COMMIT is on its way: nothing more may be sent. */
  private closing = false;
  private corked = false;
  private readonly locals = new Map<object, unknown>();

  constructor(
    runner: QueryRunner,
    private readonly client: PoolClient,
    private readonly options: UnitOfWorkOptions = {},
  ) {
    this.manager = runner.manager;
  }

  /** A statement in this transaction, awaited: TypeORM's answer (rows; for a data-changing statement `[rows, count]`). */
  query<R = any>(sql: string, parameters?: unknown[]): Promise<R> {
    return this.manager.query(sql, parameters);
  }

  /**
   * Sends a named statement without waiting for its answer: it leaves with whatever
   * else this turn sends, at the latest with the COMMIT. A caller that needs the answer
   * awaits the returned promise (the order lock). If it fails, the transaction fails
   * (PostgreSQL turns the COMMIT into a rollback, and runInTransaction throws the
   * failure, through `mapError` if given) even if nobody waits for it. So a statement
   * nobody waits for must need no check in code: a condition that must hold is asserted
   * in the SQL itself (expect_rows), where a failure aborts the transaction.
   */
  send<R>(query: NamedQuery, mapError?: (error: unknown) => unknown): Promise<R[]> {
    if (this.closing) throw new Error(`${query.name}: sent after the transaction's COMMIT`);
    this.corkTurn();
    const sent: Sent = { answer: Promise.resolve() };
    // The callback form: a statement that fails on the client (a value that does not bind) is
    // marked failed before send returns, so the transaction cannot send its COMMIT after it.
    const answer = new Promise<R[]>((resolve, reject) => {
      this.client.query(query, (error: Error | null, result: QueryResult) => {
        if (!error) return resolve(result.rows as R[]);
        const mapped = mapError ? mapError(error) : error;
        sent.failure ??= { error: mapped };
        reject(mapped);
      });
    });
    // Handled here: a caller may never wait for it, and the failure surfaces from the transaction.
    answer.catch(() => undefined);
    sent.answer = answer;
    this.sent.push(sent);
    return answer;
  }

  /**
   * Waits for every statement sent so far; throws the first failure. Before a
   * savepoint's release; and before its rollback (the failure then caught), so that
   * what the savepoint undid no longer counts against the transaction.
   */
  async settle(): Promise<void> {
    const sent = this.sent.splice(0);
    for (const s of sent) await s.answer;
  }

  /**
   * Runs `fn` once the transaction's work is done, just before its COMMIT is sent, unless a
   * statement has failed already: what it sends leaves in the COMMIT's write and sees the
   * transaction's final state (a rolled-back savepoint's rows are gone), at no extra round
   * trip. Its answers are in when afterCommit callbacks run.
   */
  beforeCommit(fn: () => void): void {
    this.beforeCommits.push(fn);
  }

  /** Runs `fn` after the transaction commits, and never if it rolls back: wake-ups and other hints whose loss only delays work. */
  afterCommit(fn: () => void): void {
    this.afterCommits.push(fn);
  }

  /** The trace context of the event `inboxId` this transaction serves, if any. */
  traceparentOf(inboxId: string): string | undefined {
    return this.options.traceparents?.get(inboxId);
  }

  /** State `owner` keeps for the length of this transaction, made by `create` on first use. */
  local<T>(owner: object, create: () => T): T {
    if (!this.locals.has(owner)) this.locals.set(owner, create());
    return this.locals.get(owner) as T;
  }

  /** runInTransaction's part: BEGIN, with the first statement. */
  begin(): void {
    this.corkTurn();
    const begun = this.client.query('BEGIN');
    begun.catch(() => undefined);
    this.sent.push({ answer: begun });
  }

  /** runInTransaction's part: the before-commit work and the COMMIT, pipelined with what is still in flight. */
  async commit(): Promise<void> {
    // One that failed already (even on the client, never sent): no COMMIT of the rest.
    this.throwFirstFailure();
    for (const fn of this.beforeCommits.splice(0)) fn();
    this.throwFirstFailure();
    this.closing = true;
    this.corkTurn();
    forgetReplicationNotice(this.client);
    const committed = this.client.query('COMMIT');
    committed.catch(() => undefined);
    const answers = await Promise.allSettled(this.sent.splice(0).map((s) => s.answer));
    // A statement that failed in PostgreSQL made it answer the COMMIT with a rollback: the first failure is the outcome.
    if ((await committed).command !== 'COMMIT') {
      const first = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
      throw first ? first.reason : new Error('the transaction was rolled back');
    }
    // Committed here, maybe not on the synchronous standby: not a success to answer with.
    assertReplicated(this.client);
  }

  async rollback(): Promise<void> {
    await this.client.query('ROLLBACK').catch(() => undefined);
  }

  /** After the commit: the hints, none of which may turn a committed transaction into an error. */
  committed(): void {
    for (const fn of this.afterCommits) {
      try {
        fn();
      } catch {
        // A failed hint only delays work.
      }
    }
  }

  private throwFirstFailure(): void {
    const failed = this.sent.find((s) => s.failure);
    if (failed) throw failed.failure!.error;
  }

  /**
   * Holds back every statement the connection is given until the end of this turn of the event
   * loop, so the statements one step of the code issues leave in one write and come back in one
   * round trip (the pool's connections run in pipeline mode, see data-source.ts). Each round trip
   * costs both processes a wake-up and a few socket calls: at moderate rates that, not the SQL,
   * is most of the cost.
   */
  private corkTurn(): void {
    if (this.corked) return;
    const stream = (this.client as unknown as { connection: { stream: NodeJS.WritableStream & { cork(): void; uncork(): void } } })
      .connection.stream;
    this.corked = true;
    stream.cork();
    setImmediate(() => {
      this.corked = false;
      stream.uncork();
    });
  }
}

/**
 * Runs `work` in a transaction of its own, in as few round trips as its statements allow:
 * BEGIN leaves with the first statement, and the COMMIT with the statements sent in the last
 * step, in one write (pipelined: PostgreSQL runs them in order, and after a failure the COMMIT
 * rolls back). afterCommit callbacks run once it has committed. `uow.manager` is a TypeORM
 * EntityManager like any other: its query() calls and nested transaction() savepoints work.
 */
export async function runInTransaction<T>(
  dataSource: DataSource,
  work: (uow: UnitOfWork) => Promise<T>,
  options?: UnitOfWorkOptions,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  const client = (await runner.connect()) as PoolClient;
  const uow = new UnitOfWork(runner, client, options);
  try {
    uow.begin();
    markActive(runner, true);
    let result: T;
    try {
      result = await work(uow);
      await uow.commit();
    } catch (error) {
      await uow.rollback();
      throw error;
    } finally {
      markActive(runner, false);
    }
    uow.committed();
    return result;
  } finally {
    await runner.release();
  }
}

/**
 * Runs `work` in a transaction that is always rolled back, whatever it did: a dry run of
 * real code against the real data (the effect preview). beforeCommit and afterCommit
 * callbacks never run. `lockTimeoutMs` and `statementTimeoutMs` bound each wait and each
 * statement (SET LOCAL: they end with the transaction), so no lock is waited on or held
 * longer than a few statements of these. Every sent statement is settled before the rollback.
 */
export async function runRolledBack<T>(
  dataSource: DataSource,
  limits: { lockTimeoutMs: number; statementTimeoutMs: number },
  work: (uow: UnitOfWork) => Promise<T>,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  const client = (await runner.connect()) as PoolClient;
  const uow = new UnitOfWork(runner, client);
  try {
    uow.begin();
    markActive(runner, true);
    try {
      await uow.query(`SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`, [
        `${limits.lockTimeoutMs}ms`,
        `${limits.statementTimeoutMs}ms`,
      ]);
      const result = await work(uow);
      await uow.settle();
      return result;
    } finally {
      await uow.settle().catch(() => undefined);
      await uow.rollback();
      markActive(runner, false);
    }
  } finally {
    await runner.release();
  }
}

/** TypeORM's view of the runner: in a transaction of depth 1, so a nested manager.transaction() takes a savepoint. */
function markActive(runner: QueryRunner, active: boolean): void {
  const state = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
  state.isTransactionActive = active;
  state.transactionDepth = active ? 1 : 0;
}
