import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The four tables of DESIGN section 5. Hot tables get a fillfactor below 100 so
 * status updates stay HOT (heap-only) and the partial "due" indexes stay small.
 */
export class InitialSchema1764460800000 implements MigrationInterface {
  name = 'InitialSchema1764460800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_inbox (
        id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source_scope     text        NOT NULL,
        event_id         text        NOT NULL,
        tenant_id        text        NOT NULL,
        provider         text        NOT NULL,
        endpoint_id      text        NOT NULL,
        event_type       text        NOT NULL,
        payload          jsonb,
        payload_sha256   text        NOT NULL CHECK (payload_sha256 ~ '^[0-9a-f]{64}$'),
        verified_with    text        NOT NULL,
        status           text        NOT NULL CHECK (status IN ('pending','processing','done','ignored','quarantined')),
        status_reason    text,
        attempts         integer     NOT NULL DEFAULT 0,
        next_attempt_at  timestamptz NOT NULL DEFAULT now(),
        locked_by        text,
        locked_until     timestamptz,
        last_error       text,
        received_at      timestamptz NOT NULL DEFAULT now(),
        completed_at     timestamptz,
        deliveries       integer     NOT NULL DEFAULT 1,
        last_delivery_at timestamptz NOT NULL DEFAULT now(),
        digest_conflicts integer     NOT NULL DEFAULT 0,
        CONSTRAINT webhook_inbox_identity UNIQUE (source_scope, event_id)
      ) WITH (fillfactor = 80)`);
    await q.query(`CREATE INDEX webhook_inbox_due ON webhook_inbox (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_inbox_leased ON webhook_inbox (locked_until) WHERE status = 'processing'`);
    await q.query(`CREATE INDEX webhook_inbox_received ON webhook_inbox (received_at, id)`);

    await q.query(`
      CREATE TABLE orders (
        tenant_id           text        NOT NULL,
        id                  text        NOT NULL,
        status              text        NOT NULL CHECK (status IN ('awaiting_payment','paid','refunded','canceled')),
        provider_payment_id text,
        total_minor         bigint      NOT NULL CHECK (total_minor >= 0),
        currency            text        NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
        customer_email      text        NOT NULL,
        last_payment_error  text,
        created_at          timestamptz NOT NULL DEFAULT now(),
        updated_at          timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, id)
      ) WITH (fillfactor = 90)`);
    await q.query(`CREATE UNIQUE INDEX orders_payment ON orders (tenant_id, provider_payment_id) WHERE provider_payment_id IS NOT NULL`);

    await q.query(`
      CREATE TABLE outbox (
        id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        operation_key    text        NOT NULL,
        destination      text        NOT NULL,
        operation_type   text        NOT NULL,
        tenant_id        text        NOT NULL,
        payload          jsonb       NOT NULL,
        status           text        NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending','delivering','delivered','unresolved','dead')),
        attempts         integer     NOT NULL DEFAULT 0,
        next_attempt_at  timestamptz NOT NULL DEFAULT now(),
        locked_by        text,
        locked_until     timestamptz,
        last_error       text,
        last_status_code integer,
        outcome_unknown  boolean     NOT NULL DEFAULT false,
        source_event_id  bigint,
        created_at       timestamptz NOT NULL DEFAULT now(),
        delivered_at     timestamptz,
        CONSTRAINT outbox_operation_key UNIQUE (operation_key)
      ) WITH (fillfactor = 80)`);
    await q.query(`CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX outbox_leased ON outbox (locked_until) WHERE status = 'delivering'`);
    await q.query(`CREATE INDEX outbox_created ON outbox (created_at, id)`);

    await q.query(`
      CREATE TABLE admin_audit (
        id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        actor         text        NOT NULL,
        role          text        NOT NULL,
        action        text        NOT NULL,
        target        text        NOT NULL,
        reason        text        NOT NULL,
        before_status text,
        after_status  text,
        details       jsonb,
        at            timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX admin_audit_at ON admin_audit (at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE admin_audit');
    await q.query('DROP TABLE outbox');
    await q.query('DROP TABLE orders');
    await q.query('DROP TABLE webhook_inbox');
  }
}
