/**
 * PostgreSQL SQLSTATE classes and Node socket errors that mean "the database did
 * not answer" or "the outcome is unknown": the caller must answer 503, never 200.
 */
const UNAVAILABLE_SQLSTATE_CLASSES = ['08', '53', '57'];
/** 25006: a write reached a read-only server (a standby, a demoted primary): nothing was written; another server takes over. */
const UNAVAILABLE_SQLSTATES = new Set(['25006']);
const NODE_NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // TypeORM releases a transaction's connection when the server drops it; the next statement
  // (or the COMMIT) throws one of these: nothing was committed, or the outcome is unknown.
  if (/^QueryRunner(Provider)?AlreadyReleasedError$/.test(error.name)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NODE_NETWORK_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && (UNAVAILABLE_SQLSTATE_CLASSES.includes(code.slice(0, 2)) || UNAVAILABLE_SQLSTATES.has(code)))
      return true;
  }
  // "Query read timeout": pg's query_timeout, a server that stopped answering (a primary gone silent).
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|connection not open|Query read timeout/i.test(
    error.message,
  );
}

/** Bad data PostgreSQL refuses (class 22, e.g. \u0000 in jsonb; 54 = too deep/complex). */
export function isInvalidData(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}

/** 40P01: PostgreSQL broke a lock cycle by aborting this statement; nothing of it was committed. */
export function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40P01';
}

/** 55P03 (lock_timeout) or 57014 (statement_timeout): a bounded wait ran out; nothing of the statement happened. */
export function isTimeoutOfWait(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '55P03' || code === '57014';
}

/** 40001: a concurrent transaction changed what this one read; retrying is safe. */
export function isSerializationFailure(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40001';
}

/** 23505: the statement would have broken a unique index (`constraint`, when given); nothing of it was written. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** P0001 from expect_rows(..., reason): a statement's own assertion failed, and its transaction with it. */
export function isExpectationFailed(error: unknown, reason: string): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === 'P0001' && e.message === reason;
}
