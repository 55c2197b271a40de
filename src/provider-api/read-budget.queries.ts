/**
 * Takes up to $2 reads from key $1's token bucket (capacity $4, refill $3 per
 * second) in one statement: the row lock of the upsert serialises every instance
 * on that key. All SET expressions see the row as it was, so `granted` and the new
 * `tokens` come from the same refill. The elapsed time is never negative (instances'
 * statements may start out of order).
 */
export const TAKE_READS = `
  INSERT INTO provider_read_budget AS b (key_id, tokens, refilled_at, granted)
  VALUES ($1, $4::float8 - LEAST($2, floor($4::float8)), now(), LEAST($2, floor($4::float8)))
  ON CONFLICT (key_id) DO UPDATE SET
    granted = LEAST($2, floor(LEAST($4::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - b.refilled_at)) * $3::float8))),
    tokens = LEAST($4::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - b.refilled_at)) * $3::float8)
             - LEAST($2, floor(LEAST($4::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - b.refilled_at)) * $3::float8))),
    refilled_at = GREATEST(b.refilled_at, now())
  RETURNING granted, tokens`;
