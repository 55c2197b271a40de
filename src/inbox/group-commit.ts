export interface GroupCommitOptions<T, R> {
  /** Most items in one flush (one multi-row statement, one commit). */
  maxBatch: number;
  /** How long a lone item may wait for company; 0 flushes at the end of the current event-loop turn. */
  maxWaitMs: number;
  /** Flushes in flight at once: while they run, new items gather into the next batch. */
  maxInFlight: number;
  /** Most items waiting for a flush; past it `submit` rejects at once with QueueFullError. */
  queueMax?: number;
  /**
   * Longest an item's submitter waits for its answer; then it gets WaitExpiredError. An item still
   * queued is dropped (never committed); one already in a flush may still commit.
   */
  waiterDeadlineMs?: number;
  /** Items with the same key never share a batch (a statement may not touch one row twice). */
  key: (item: T) => string;
  /** Commits the items together and answers each, in order. Rejecting fails every item of the batch. */
  flush: (items: T[]) => Promise<R[]>;
}

interface Waiter<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/** The queue holds `queueMax` items: nothing of this one was sent. */
export class QueueFullError extends Error {
  constructor() {
    super('group commit queue full');
  }
}

/** The submitter waited `waiterDeadlineMs`: the item was either dropped from the queue or its flush had not answered yet. */
export class WaitExpiredError extends Error {
  constructor(readonly queued: boolean) {
    super(queued ? 'dropped from the group commit queue' : 'group commit flush did not answer in time');
  }
}

/**
 * Group commit: concurrent submitters share one statement and one commit, and
 * each is answered only after that commit, with its own item's result. Under
 * load, batches form by themselves while the previous flush is in flight; when
 * idle, an item is flushed almost at once.
 */
export class GroupCommit<T, R> {
  private queue: Waiter<T, R>[] = [];
  private inFlight = 0;
  private timer?: NodeJS.Timeout;
  private scheduled = false;

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  /** Items waiting for a flush (not those in one). */
  get queued(): number {
    return this.queue.length;
  }

  submit(item: T): Promise<R> {
    if (this.options.queueMax !== undefined && this.queue.length >= this.options.queueMax) {
      return Promise.reject(new QueueFullError());
    }
    return new Promise<R>((resolve, reject) => {
      const deadlineMs = this.options.waiterDeadlineMs;
      if (deadlineMs === undefined) {
        this.queue.push({ item, resolve, reject });
      } else {
        const waiter: Waiter<T, R> = {
          item,
          resolve: (result) => (clearTimeout(timer), resolve(result)),
          reject: (error) => (clearTimeout(timer), reject(error)),
        };
        const timer = setTimeout(() => {
          // Still queued: dropped, so it is never committed. In a flush: answered now, committed or not.
          const index = this.queue.indexOf(waiter);
          if (index >= 0) this.queue.splice(index, 1);
          reject(new WaitExpiredError(index >= 0));
        }, deadlineMs);
        this.queue.push(waiter);
      }
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight >= this.options.maxInFlight || this.scheduled) return;
    if (this.queue.length >= this.options.maxBatch) {
      this.drain();
      return;
    }
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.timer = undefined;
      this.drain();
    };
    if (this.options.maxWaitMs > 0) this.timer = setTimeout(run, this.options.maxWaitMs);
    else setImmediate(run);
  }

  private drain(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      this.inFlight++;
      void this.run(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.schedule();
      });
    }
  }

  /** Up to maxBatch waiters with distinct keys, in arrival order; the rest stay queued. */
  private take(): Waiter<T, R>[] {
    const batch: Waiter<T, R>[] = [];
    const keys = new Set<string>();
    const rest: Waiter<T, R>[] = [];
    for (const waiter of this.queue) {
      const key = this.options.key(waiter.item);
      if (batch.length < this.options.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(waiter);
      } else {
        rest.push(waiter);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async run(batch: Waiter<T, R>[]): Promise<void> {
    try {
      const results = await this.options.flush(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]));
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
