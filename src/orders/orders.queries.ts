import { opaque } from '../database/prepared-statement';

/** Hand-written SQL of the orders module. */

const ORDER_COLUMNS = `tenant_id, id, status, provider_payment_id, total_minor, currency, customer_email,
  last_payment_error, created_at, updated_at`;

export const INSERT_ORDER = `
  INSERT INTO orders (tenant_id, id, status, provider_payment_id, total_minor, currency, customer_email)
  VALUES ($1, $2, 'awaiting_payment', $3, $4, $5, $6)
  ON CONFLICT (tenant_id, id) DO NOTHING
  RETURNING ${ORDER_COLUMNS}`;

export const SELECT_ORDER = `SELECT ${ORDER_COLUMNS} FROM orders WHERE tenant_id = $1 AND id = $2`;

/**
 * Locks the orders of a batch of events for the rest of the transaction, in key
 * order (LockRows runs above the sort), so two batches never wait on each other
 * in a cycle. Their events then apply one at a time.
 */
export const LOCK_ORDERS = `
  SELECT ${ORDER_COLUMNS} FROM orders
   WHERE (tenant_id, id) IN (SELECT * FROM unnest(${opaque(1, 'text[]')}, ${opaque(2, 'text[]')}))
   ORDER BY tenant_id, id
     FOR UPDATE`;

/**
 * The conditional transitions: each bound to tenant, order, payment id (NULL
 * binds it), amount, currency and the expected status. Fewer rows than the $13
 * asked: an order is not what the decision assumed, and expect_rows fails the
 * statement and its transaction (the worker does not wait for the answer before
 * its COMMIT). The same statement appends each event's step ($8..$12) to
 * order_transitions, the order's history that the event timeline reads.
 */
export const TRANSITION_ORDERS = `
  WITH moved AS (
    UPDATE orders o
       SET status = v.to_status,
           provider_payment_id = COALESCE(o.provider_payment_id, v.payment_id),
           updated_at = now()
      FROM unnest(${opaque(1, 'text[]')}, ${opaque(2, 'text[]')}, ${opaque(3, 'text[]')}, ${opaque(4, 'bigint[]')},
                  ${opaque(5, 'text[]')}, ${opaque(6, 'text[]')}, ${opaque(7, 'text[]')})
           AS v(tenant_id, id, payment_id, total_minor, currency, from_status, to_status)
     WHERE o.tenant_id = v.tenant_id AND o.id = v.id
       AND (o.provider_payment_id IS NULL OR o.provider_payment_id = v.payment_id)
       AND o.total_minor = v.total_minor AND o.currency = v.currency AND o.status = v.from_status
    RETURNING 1
  ), steps AS (
    INSERT INTO order_transitions (tenant_id, order_id, inbox_id, from_status, to_status, at)
    SELECT *, now() FROM unnest(${opaque(8, 'text[]')}, ${opaque(9, 'text[]')}, ${opaque(10, 'bigint[]')}, ${opaque(11, 'text[]')}, ${opaque(12, 'text[]')})
  )
  SELECT expect_rows(count(*), $13, 'order_changed_concurrently') FROM moved`;

/** The order history an inbox event wrote (index order_transitions_inbox). */
export const TRANSITIONS_BY_EVENT = `
  SELECT tenant_id, order_id, from_status, to_status, at FROM order_transitions WHERE inbox_id = $1 ORDER BY at`;

/** The steps the current transaction wrote for an inbox event: TRANSITION_ORDERS stamps them with its now(). */
export const TRANSITIONS_WRITTEN_NOW = `
  SELECT tenant_id, order_id, from_status, to_status, at FROM order_transitions WHERE inbox_id = $1 AND at = now() ORDER BY at`;

export const RECORD_PAYMENT_ERRORS = `
  UPDATE orders o
     SET last_payment_error = v.error, updated_at = now()
    FROM unnest(${opaque(1, 'text[]')}, ${opaque(2, 'text[]')}, ${opaque(3, 'text[]')}) AS v(tenant_id, id, error)
   WHERE o.tenant_id = v.tenant_id AND o.id = v.id AND o.status = 'awaiting_payment'`;

// ---- Erasure (an operator's use case, CustomerErasureService) ----

/** The orders of one customer by e-mail address, locked in key order. No index: an operator's rare call reads the table once. */
export const ERASURE_LOCK_BY_EMAIL = `
  SELECT tenant_id, id, customer_email FROM orders WHERE lower(customer_email) = lower($1) ORDER BY tenant_id, id FOR UPDATE`;

export const ERASURE_LOCK_ORDER = `SELECT tenant_id, id, customer_email FROM orders WHERE tenant_id = $1 AND id = $2 FOR UPDATE`;

/** Blanks the e-mail address of the orders; everything else of them (ids, amounts, status) stays. */
export const ERASE_CUSTOMER_EMAIL = `
  UPDATE orders o SET customer_email = '', updated_at = now()
    FROM unnest($1::text[], $2::text[]) AS v(tenant_id, id)
   WHERE o.tenant_id = v.tenant_id AND o.id = v.id`;

// ---- Retention (maintenance role) ----

/**
 * Deletes up to $2 orders created and last changed before $1 (RETENTION_ORDER_DAYS),
 * oldest first (index orders_created), with their transitions. A late event for a
 * deleted order finds none and is retried, then quarantined: never applied twice.
 */
export const PRUNE_ORDERS = `
  WITH gone AS (
    DELETE FROM orders
     WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM orders
                                WHERE created_at < $1 AND updated_at < $1
                                ORDER BY created_at
                                LIMIT $2
                                  FOR UPDATE SKIP LOCKED)
    RETURNING tenant_id, id
  ), history AS (
    DELETE FROM order_transitions t USING gone g WHERE t.tenant_id = g.tenant_id AND t.order_id = g.id
  )
  SELECT count(*)::int AS n FROM gone`;
