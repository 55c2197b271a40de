import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTsChild } from '../support/child-process';

/**
 * The dev database (no DATABASE_URL) is kept between runs. After an unclean stop (a crash, a power
 * cut, a reboot) postmaster.pid stays behind, naming a pid the OS may since have given to any other
 * process of the user. Found by an adversarial review: the start sent that process SIGINT.
 */
describe('embedded PostgreSQL with a stale postmaster.pid', () => {
  it('does not signal an unrelated process that reuses the stale pid', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'wi-stale-pid-')), 'postgres');
    const result = await runTsChild('test/database/stale-pid-child.ts', [dir]);
    const line = result.output.trim().split('\n').pop()!;
    expect(JSON.parse(line)).toEqual({ bystander: 'alive' });
  }, 120_000);
});
