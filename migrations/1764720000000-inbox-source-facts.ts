import { MigrationInterface, QueryRunner } from 'typeorm';
import { addColumn } from './concurrent-index';

/**
 * The verified facts about an event's sender (Stripe account and mode, GitHub hook
 * id, Shopify shop domain) that the endpoint's `expect` was checked against at
 * accept time, so a replay can re-run that decision. GitHub's and Shopify's come
 * from headers and were not stored before.
 *
 * A nullable column without a default: a catalogue change, no rewrite, no long lock.
 * During a rolling deploy an old instance neither writes nor reads it (its rows have
 * NULL facts, which a replay on an endpoint with `expect` refuses).
 */
export class InboxSourceFacts1764720000000 implements MigrationInterface {
  name = 'InboxSourceFacts1764720000000';

  async up(q: QueryRunner): Promise<void> {
    // Waits 5 s at most for its lock (runWithLockTimeout): queued behind a long reader, it would hold up every insert.
    await addColumn(q, 'webhook_inbox', 'source_facts', 'jsonb');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_inbox DROP COLUMN source_facts`);
  }
}
