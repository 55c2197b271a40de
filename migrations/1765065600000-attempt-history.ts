import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Append-only history behind the event timeline (GET /admin/inbox/:id/timeline):
 * each worker attempt, each relay attempt and each order transition, written by
 * the very statements that record the outcome (a data-modifying CTE), so the hot
 * path gains no round trip. No foreign keys: an RI check per inserted row would
 * cost the hot path more than the history itself; the retention statements that
 * delete an inbox identity or an outbox entry delete its history in the same
 * statement instead. Order transitions belong to the order, which is never purged.
 *
 * New tables only: no lock on a hot table. During a rolling deploy an old instance
 * neither writes nor reads them, so an event handled by an old instance shows no
 * attempts in its timeline (its row's counters still say what happened).
 */
export class AttemptHistory1765065600000 implements MigrationInterface {
  name = 'AttemptHistory1765065600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_inbox_attempts (
        inbox_id bigint      NOT NULL,
        attempt  integer     NOT NULL,
        at       timestamptz NOT NULL,
        lease    text,
        outcome  text        NOT NULL CHECK (outcome IN ('done','ignored','quarantined','retry','lease_expired')),
        reason   text,
        error    text
      )`);
    await q.query(`CREATE INDEX webhook_inbox_attempts_inbox ON webhook_inbox_attempts (inbox_id)`);

    await q.query(`
      CREATE TABLE outbox_attempts (
        outbox_id      bigint      NOT NULL,
        attempt        integer     NOT NULL,
        at             timestamptz NOT NULL,
        lease          text        NOT NULL,
        outcome        text        NOT NULL CHECK (outcome IN ('delivered','retry','dead','unresolved')),
        status_code    integer,
        duration_ms    integer,
        outcome_query  text        CHECK (outcome_query IN ('applied','not_applied','unknown')),
        retry_after_ms integer,
        error          text
      )`);
    await q.query(`CREATE INDEX outbox_attempts_outbox ON outbox_attempts (outbox_id)`);

    await q.query(`
      CREATE TABLE order_transitions (
        tenant_id   text        NOT NULL,
        order_id    text        NOT NULL,
        inbox_id    bigint      NOT NULL,
        from_status text        NOT NULL,
        to_status   text        NOT NULL,
        at          timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX order_transitions_inbox ON order_transitions (inbox_id)`);
    await q.query(`CREATE INDEX order_transitions_order ON order_transitions (tenant_id, order_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE order_transitions');
    await q.query('DROP TABLE outbox_attempts');
    await q.query('DROP TABLE webhook_inbox_attempts');
  }
}
