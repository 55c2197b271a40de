import { DataSource } from 'typeorm';
import { Socket } from 'node:net';
import { isExpectationFailed } from '../../src/common/database-errors';
import { runInTransaction } from '../../src/database/unit-of-work';
import { createDataSource } from '../../src/database/data-source';
import { createTestDatabase, TestDatabase } from '../support/test-database';

describe('afterCommit', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await createDataSource(db.url, 2).initialize();
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('runs the callback once the transaction has committed, and never after a rollback', async () => {
    const calls: string[] = [];
    await runInTransaction(dataSource, async (tx) => {
      tx.afterCommit(() => calls.push('committed'));
      await tx.query('SELECT 1');
      expect(calls).toEqual([]);
    });
    await expect(
      runInTransaction(dataSource, async (tx) => {
        tx.afterCommit(() => calls.push('rolled back'));
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(calls).toEqual(['committed']);
  });

  describe('statements sent without waiting (send)', () => {
    const insert = (id: number) => ({ name: 'pipe_insert', text: 'INSERT INTO pipe_test (id) VALUES ($1)', values: [id] });
    const ids = async () => (await dataSource.query('SELECT id FROM pipe_test ORDER BY id')).map((r: { id: number }) => r.id);
    beforeAll(() => dataSource.query('CREATE TABLE pipe_test (id int PRIMARY KEY)'));
    beforeEach(() => dataSource.query('TRUNCATE pipe_test'));

    it('costs a transaction one socket write per step: BEGIN leaves with the first statement, COMMIT with the last ones', async () => {
      const writes = [jest.spyOn(Socket.prototype as never, '_writev'), jest.spyOn(Socket.prototype as never, '_write')];
      try {
        await runInTransaction(dataSource, async (tx) => {
          expect(await tx.query('SELECT count(*)::int AS n FROM pipe_test')).toEqual([{ n: 0 }]);
          void tx.send(insert(1));
          void tx.send(insert(2));
        });
        expect(writes.reduce((n, w) => n + w.mock.calls.length, 0)).toBe(2);
      } finally {
        writes.forEach((w) => w.mockRestore());
      }
      expect(await ids()).toEqual([1, 2]);
    });

    it('a failure among them rolls the whole transaction back though nobody waited for it, and is what the transaction throws', async () => {
      const calls: string[] = [];
      await expect(
        runInTransaction(dataSource, async (tx) => {
          tx.afterCommit(() => calls.push('committed'));
          void tx.send(insert(3));
          // The condition is asserted in the SQL: it aborts the transaction before the COMMIT.
          void tx.send({ name: 'pipe_expect', text: 'SELECT expect_rows(count(*), 2, $1) FROM pipe_test', values: ['two_rows'] }, (e) =>
            isExpectationFailed(e, 'two_rows') ? new Error('not two rows') : e,
          );
          void tx.send(insert(4));
        }),
      ).rejects.toThrow('not two rows');
      expect(calls).toEqual([]);
      expect(await ids()).toEqual([]);
      // The connection went back to the pool usable.
      await runInTransaction(dataSource, async (tx) => void tx.send(insert(5)));
      expect(await ids()).toEqual([5]);
    });

    it('one that fails on the client, before it is sent, is not followed by a COMMIT of the rest', async () => {
      const unbindable = {
        toPostgres: () => {
          throw new Error('does not bind');
        },
      };
      await expect(
        runInTransaction(dataSource, async (tx) => {
          void tx.send(insert(7));
          void tx.send({ name: 'pipe_unbindable', text: 'INSERT INTO pipe_test (id) VALUES ($1)', values: [unbindable] });
        }),
      ).rejects.toThrow('does not bind');
      expect(await ids()).toEqual([]);
    });

    it('one that failed inside a savepoint rolled back no longer counts: the rest commits, and the transaction succeeds', async () => {
      await runInTransaction(dataSource, async (tx) => {
        void tx.send(insert(8));
        await tx.query('SAVEPOINT inner_work');
        void tx.send(insert(8)); // a duplicate key: fails, inside the savepoint
        await tx.settle().catch(() => undefined);
        await tx.query('ROLLBACK TO SAVEPOINT inner_work');
        void tx.send(insert(9));
      });
      expect(await ids()).toEqual([8, 9]);
    });

    it('nothing may be sent once the COMMIT is on its way', async () => {
      let late: unknown;
      await runInTransaction(dataSource, async (tx) => {
        void tx.send(insert(10));
        // Once the work has returned, while the COMMIT's answer is on its way.
        setImmediate(() => {
          try {
            void tx.send(insert(11));
          } catch (error) {
            late = error;
          }
        });
      });
      expect(String(late)).toMatch(/after the transaction's COMMIT/);
      expect(await ids()).toEqual([10]);
    });

    it('a failed statement in the code between them rolls back what was sent before it', async () => {
      await expect(
        runInTransaction(dataSource, async (tx) => {
          void tx.send(insert(6));
          await tx.query('SELECT 1/0');
        }),
      ).rejects.toThrow(/division by zero/);
      expect(await ids()).toEqual([]);
    });
  });
});
