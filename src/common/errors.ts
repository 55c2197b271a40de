/**
 * Errors that carry their HTTP meaning. The global filter maps them to a status
 * and a stable `reason` code; anything else becomes a 500 that says nothing internal.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string = reason,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends AppError {
  constructor(reason: string, message?: string) {
    super(400, reason, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(reason: string, message?: string) {
    super(401, reason, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(reason = 'forbidden', message?: string) {
    super(403, reason, message);
  }
}

export class NotFoundError extends AppError {
  constructor(reason: string, message?: string) {
    super(404, reason, message);
  }
}

export class ConflictError extends AppError {
  constructor(reason: string, message?: string) {
    super(409, reason, message);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor() {
    // Close the connection: the rest of the body is never read.
    super(413, 'body_too_large', 'body exceeds the endpoint limit', { Connection: 'close' });
  }
}

/** A JSON body nested deeper than MAX_PAYLOAD_DEPTH (common/json-depth.ts): no walk of it is safe, so it is never stored. */
export class PayloadTooDeepError extends BadRequestError {
  constructor(max: number) {
    super('payload_too_deep', `JSON nested deeper than ${max} levels`);
  }
}

/** The database is unreachable or a commit's outcome is unknown: the sender must retry. */
export class ServiceUnavailableError extends AppError {
  constructor(reason = 'database_unavailable', retryAfterSeconds = 5) {
    super(503, reason, 'service temporarily unavailable', { 'Retry-After': String(retryAfterSeconds) });
  }
}

/**
 * A bound on what strangers may hold before authentication was reached (connections,
 * bytes buffered, the accept queue): the sender retries after a short pause.
 * `closeConnection` when the request's body was left unread.
 */
export class BusyError extends AppError {
  constructor(reason = 'intake_busy', retryAfterSeconds = 1, closeConnection = false) {
    super(
      503,
      reason,
      'too busy: retry shortly',
      closeConnection ? { 'Retry-After': String(retryAfterSeconds), Connection: 'close' } : { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

/** A failure worth retrying later (the worker backs off). */
export class TransientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransientError';
  }
}

/**
 * Not yet: the event is early and another event will make it applicable (a refund ahead of its
 * payment; a confirm read the provider does not answer yet is a plain TransientError). The
 * worker hands it back without counting an attempt for WORKER_WAIT_HOURS after its receipt (a
 * sender may deliver the event it waits for that late: Stripe retries a failed delivery for up
 * to 3 days), then as any TransientError.
 */
export class WaitingError extends TransientError {
  constructor(reason: string) {
    super(reason);
    this.name = 'WaitingError';
  }
}

/** A failure no retry can fix (the worker quarantines). */
export class PermanentError extends Error {
  constructor(
    readonly reason: string,
    message: string = reason,
  ) {
    super(message);
    this.name = 'PermanentError';
  }
}
