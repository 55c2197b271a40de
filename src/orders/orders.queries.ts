/** Hand-written SQL of the orders module. */

const ORDER_COLUMNS = `tenant_id, id, status, provider_payment_id, total_minor, currency, customer_email,
  last_payment_error, created_at, updated_at`;

export const INSERT_ORDER = `
  INSERT INTO orders (tenant_id, id, status, provider_payment_id, total_minor, currency, customer_email)
  VALUES ($1, $2, 'awaiting_payment', $3, $4, $5, $6)
  ON CONFLICT (tenant_id, id) DO NOTHING
  RETURNING ${ORDER_COLUMNS}`;

export const SELECT_ORDER = `SELECT ${ORDER_COLUMNS} FROM orders WHERE tenant_id = $1 AND id = $2`;

/** Locks the order for the rest of the event's transaction: its events apply one at a time. */
export const LOCK_ORDER = `${SELECT_ORDER} FOR UPDATE`;

/**
 * The conditional transition: bound to tenant, order, payment id (NULL binds it),
 * amount, currency and the expected status. Zero rows: the order is not what
 * the decision assumed.
 */
export const TRANSITION_ORDER = `
  UPDATE orders
     SET status = $7,
         provider_payment_id = COALESCE(provider_payment_id, $3),
         updated_at = now()
   WHERE tenant_id = $1 AND id = $2
     AND (provider_payment_id IS NULL OR provider_payment_id = $3)
     AND total_minor = $4 AND currency = $5 AND status = $6
  RETURNING ${ORDER_COLUMNS}`;

export const RECORD_PAYMENT_ERROR = `
  UPDATE orders
     SET last_payment_error = $3, updated_at = now()
   WHERE tenant_id = $1 AND id = $2 AND status = 'awaiting_payment'`;
