import { GroupCommit, QueueFullError, WaitExpiredError } from './group-commit';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('GroupCommit', () => {
  it('gathers items that arrive while a flush is in flight into the next batch', async () => {
    const batches: number[][] = [];
    const gate = deferred<void>();
    const group = new GroupCommit<number, string>({
      maxBatch: 100,
      maxWaitMs: 0,
      maxInFlight: 1,
      key: String,
      flush: async (items) => {
        batches.push(items);
        if (batches.length === 1) await gate.promise;
        return items.map((i) => `r${i}`);
      },
    });
    const first = group.submit(0);
    await new Promise((r) => setImmediate(r));
    const rest = [1, 2, 3, 4].map((i) => group.submit(i));
    gate.resolve();
    expect(await Promise.all([first, ...rest])).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(batches).toEqual([[0], [1, 2, 3, 4]]);
  });

  it('bounds the batch size and never puts one key twice in a batch', async () => {
    const batches: string[][] = [];
    const group = new GroupCommit<string, string>({
      maxBatch: 2,
      maxWaitMs: 0,
      maxInFlight: 1,
      key: (s) => s,
      flush: async (items) => {
        batches.push(items);
        return items;
      },
    });
    await Promise.all(['a', 'a', 'b', 'c', 'a'].map((s) => group.submit(s)));
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(2);
      expect(new Set(batch).size).toBe(batch.length);
    }
    expect(batches.flat().sort()).toEqual(['a', 'a', 'a', 'b', 'c']);
  });

  it('fails every item of a batch whose flush fails, and keeps serving later ones', async () => {
    let fail = true;
    const group = new GroupCommit<number, number>({
      maxBatch: 10,
      maxWaitMs: 0,
      maxInFlight: 1,
      key: String,
      flush: async (items) => {
        if (fail) throw new Error('commit failed');
        return items;
      },
    });
    const results = await Promise.allSettled([1, 2, 3].map((i) => group.submit(i)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    fail = false;
    expect(await group.submit(4)).toBe(4);
  });

  it('refuses past queueMax at once, and drops a queued item at its deadline so it is never flushed', async () => {
    jest.useFakeTimers();
    try {
      const flushed: number[] = [];
      const gate = deferred<void>();
      const group = new GroupCommit<number, number>({
        maxBatch: 1,
        maxWaitMs: 0,
        maxInFlight: 1,
        queueMax: 1,
        waiterDeadlineMs: 100,
        key: String,
        flush: async (items) => {
          flushed.push(...items);
          await gate.promise;
          return items;
        },
      });
      const inFlight = group.submit(0);
      jest.advanceTimersByTime(0);
      await Promise.resolve();
      const queued = group.submit(1);
      await expect(group.submit(2)).rejects.toBeInstanceOf(QueueFullError);
      jest.advanceTimersByTime(100);
      await expect(queued).rejects.toEqual(new WaitExpiredError(true));
      await expect(inFlight).rejects.toEqual(new WaitExpiredError(false));
      gate.resolve();
      await jest.runAllTimersAsync();
      expect(flushed).toEqual([0]);
      expect(group.queued).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
