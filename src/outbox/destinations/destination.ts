import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { DestinationDefaults, DestinationSettings } from '../../config/destinations';

/** One claimed outbox row: everything a destination needs to build its request. */
export interface OutboxEntry {
  id: string;
  operationKey: string;
  destination: string;
  operationType: string;
  tenantId: string;
  payload: Record<string, unknown>;
  /** This attempt's number (the claim counted it). */
  attempts: number;
  /** A previous attempt may have reached the destination (timeout, reset, crash). */
  outcomeUnknown: boolean;
  /** The traceparent of the processing that wrote the entry; null when tracing was off. */
  traceContext?: string | null;
  /** The aggregate within the tenant (e.g. `order:<id>`) whose entries go out in order; null for unordered entries. */
  aggregate: string | null;
}

/**
 * What one delivery attempt taught us.
 * - delivered: the destination has the effect (2xx, or 409 "already done").
 * - dead: the destination refused the request itself (other 4xx); no retry can fix it.
 * - retry: try again later; `outcomeUnknown` when the request may have been applied
 *   (timeout, reset), `retryAfterMs` when the destination asked for a delay, `down` when
 *   the answer says the destination itself is unwell (connect error, 5xx, timeout): these
 *   count towards its circuit.
 */
export type DeliveryResult =
  | { kind: 'delivered'; statusCode?: number }
  | { kind: 'dead'; statusCode?: number; error: string }
  | { kind: 'retry'; statusCode?: number; error: string; outcomeUnknown: boolean; retryAfterMs?: number; down?: boolean };

export type OperationOutcome = 'applied' | 'not_applied' | 'unknown';

export interface DeliveryOptions {
  /** Aborts the request at the relay's timeout (or shutdown). */
  signal: AbortSignal;
  /** Tracing on: send it as the W3C `traceparent` header, so the destination's own trace joins this one. */
  traceparent?: string;
}

/**
 * A place outbox entries go. Build the request from the entry alone (a resend
 * must be byte-identical) and send `entry.operationKey` as the Idempotency-Key.
 */
export interface Destination {
  /** Concurrency, circuit and rate limit (config `destinations`, or the destination's own). */
  readonly settings: DestinationSettings;
  /** False when its URL is unset: dev mode routes it to the dev sink. */
  readonly configured: boolean;
  deliver(entry: OutboxEntry, options: DeliveryOptions): Promise<DeliveryResult>;
  /**
   * Optional: did an earlier request under this key take effect? Asked before
   * resending an entry whose last outcome is unknown. Resolve 'unknown' or
   * throw when the destination cannot tell right now.
   */
  queryOutcome?(operationKey: string, options: DeliveryOptions): Promise<OperationOutcome>;
}

export const DESTINATION_NAME = 'webhook-inbox:destination-name';
export const DESTINATION_DEFAULTS = 'webhook-inbox:destination-defaults';

/**
 * Registers a class as the destination for outbox rows whose `destination` is
 * `name` (lower-case letters, digits, "_": its variables are `DESTINATION_<NAME>_*`);
 * `defaults` apply where the configuration is silent.
 */
export const DestinationFor = (name: string, defaults: DestinationDefaults = {}) => {
  if (!/^[a-z0-9]+(?:_[a-z0-9]+)*$/.test(name)) throw new Error(`destination name "${name}": lower-case letters, digits and "_" only`);
  return applyDecorators(Injectable(), SetMetadata(DESTINATION_NAME, name), SetMetadata(DESTINATION_DEFAULTS, defaults));
};
