import { DataSource } from 'typeorm';
import { afterCommit, transactionWithAfterCommit } from '../../src/database/transaction';
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
    await transactionWithAfterCommit(dataSource, async (tx) => {
      afterCommit(tx, () => calls.push('committed'));
      await tx.query('SELECT 1');
      expect(calls).toEqual([]);
    });
    await expect(
      transactionWithAfterCommit(dataSource, async (tx) => {
        afterCommit(tx, () => calls.push('rolled back'));
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(calls).toEqual(['committed']);
  });

  it('refuses a transaction it does not manage, instead of dropping the callback', async () => {
    await expect(dataSource.transaction(async (tx) => afterCommit(tx, () => undefined))).rejects.toThrow(/transactionWithAfterCommit/);
    expect(() => afterCommit(dataSource.manager, () => undefined)).toThrow(/transactionWithAfterCommit/);
  });
});
