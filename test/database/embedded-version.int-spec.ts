import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';

describe('embedded PostgreSQL data directory', () => {
  it('refuses a cluster of another major version with what to do, and touches nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wi-pg-old-'));
    writeFileSync(join(dir, 'PG_VERSION'), '17\n');
    await expect(startEmbeddedPostgres({ dir, database: 'x' })).rejects.toThrow(
      /was created by PostgreSQL 17; this version embeds PostgreSQL 18, which cannot open it\. Dump it .* or remove the directory/,
    );
  });
});
