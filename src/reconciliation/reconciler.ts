import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { EndpointConfig } from '../config/app-config';

/** The part of the provider's history one run covers, and where a resumed run continues. */
export interface ReconcileWindow {
  from: Date;
  to: Date;
  /** The provider's paging position stored by the last page done (undefined: from the start). */
  position?: string;
}

/** What a reconciler gets from the run that drives it. */
export interface ReconcileContext {
  /** Count only: `accept` writes nothing, and a provider that resends instead must ask for nothing. */
  readonly dryRun: boolean;
  /**
   * Makes one API call within the key's shared read budget, counting it; waits
   * out a 429's Retry-After (or a backoff) and retries a few times, renewing the
   * run's lease meanwhile. `call` throws ProviderUnavailableError for no answer.
   */
  call<T>(call: () => Promise<T>): Promise<T>;
  /**
   * Hands events read from the API to the acceptance path (present ones are
   * skipped), then stores `position`: a crash after this resumes after the page.
   */
  accept(events: unknown[], position: string): Promise<void>;
  /**
   * For providers that resend instead: per event of `namespace` (its id, and the time it states
   * when the id carries one: VerifiedEvent.occurredAt), whether the inbox holds it.
   */
  inInbox(namespace: string, events: { eventId: string; occurredAt?: Date }[]): Promise<boolean[]>;
  /**
   * For providers that resend instead: records a page (deliveries listed, resends asked for, and in
   * `outcomes` those the provider refused; found missing: both), then `position`.
   */
  redelivered(count: number, listed: number, position: string, outcomes?: Record<string, number>): Promise<void>;
  /** Waits `ms` (a provider's rate-limit reset) renewing the lease; throws ProviderUnavailableError past the longest wait. */
  wait(ms: number): Promise<void>;
}

/**
 * Brings in what the provider has and the inbox lacks, for one endpoint: Stripe
 * lists its events, GitHub asks for failed deliveries again. One class per
 * provider, registered with @ReconcilerFor.
 */
export interface Reconciler {
  /** Why this endpoint cannot be reconciled (checked at start), or undefined. */
  refuse?(endpoint: EndpointConfig): string | undefined;
  run(endpoint: EndpointConfig, window: ReconcileWindow, context: ReconcileContext): Promise<void>;
}

export const RECONCILER_PROVIDER = 'webhook-inbox:reconciler-provider';

/** Registers a class as the reconciler of the provider named in the endpoints file's `provider` field. */
export const ReconcilerFor = (provider: string) => applyDecorators(Injectable(), SetMetadata(RECONCILER_PROVIDER, provider));
