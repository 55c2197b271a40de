import { MigrationInterface, QueryRunner } from 'typeorm';
import { addColumn } from './concurrent-index';

/**
 * Confirm reads (issue 19): what the provider's API said about an event before
 * its transition (`webhook_inbox.confirmation`), and the read budget each API key
 * shares across instances. The column is nullable without a default, so adding it
 * rewrites nothing and takes only a brief lock; an old instance never reads or
 * writes it and keeps working during a rolling deploy.
 */
export class ProviderReads1764892800000 implements MigrationInterface {
  name = 'ProviderReads1764892800000';

  async up(q: QueryRunner): Promise<void> {
    // Waits 5 s at most for its lock (runWithLockTimeout): queued behind a long reader, it would hold up every insert.
    await addColumn(q, 'webhook_inbox', 'confirmation', 'jsonb');
    // One row per API key (by a digest prefix, never the key): a token bucket refilled by elapsed time.
    await q.query(`
      CREATE TABLE IF NOT EXISTS provider_read_budget (
        key_id      text             PRIMARY KEY,
        tokens      double precision NOT NULL,
        refilled_at timestamptz      NOT NULL,
        granted     integer          NOT NULL DEFAULT 0
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE IF EXISTS provider_read_budget');
    await q.query('ALTER TABLE webhook_inbox DROP COLUMN IF EXISTS confirmation');
  }
}
