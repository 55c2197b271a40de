import { DataSource, EntityManager } from 'typeorm';

const pending = new WeakMap<EntityManager, Array<() => void>>();

/**
 * Runs `fn` after the transaction of `tx` commits, and never if it rolls back;
 * use it for wake-ups and other hints whose loss only delays work. Only a
 * transaction opened by `transactionWithAfterCommit` runs callbacks, so any other
 * `tx` is a programming error, not a hint to drop silently.
 */
export function afterCommit(tx: EntityManager, fn: () => void): void {
  const list = pending.get(tx);
  if (!list) throw new Error('afterCommit needs a transaction opened by transactionWithAfterCommit');
  list.push(fn);
}

export async function transactionWithAfterCommit<T>(
  dataSource: DataSource,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  let manager: EntityManager | undefined;
  try {
    const result = await dataSource.transaction((tx) => {
      manager = tx;
      pending.set(tx, []);
      return work(tx);
    });
    for (const fn of pending.get(manager!) ?? []) {
      try {
        fn();
      } catch {
        // A failed hint must not turn a committed transaction into an error.
      }
    }
    return result;
  } finally {
    if (manager) pending.delete(manager);
  }
}
