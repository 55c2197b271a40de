import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { EndpointConfig } from '../config/app-config';

/**
 * What the provider's API said about the object an event is about, read just
 * before the business transaction (a confirm read). Stored on the inbox row as
 * `confirmation`; `state` holds only the fields a decision needs (no customer data).
 */
export interface ProviderReading {
  /** The object read, e.g. `payment_intent` or `charge`, and its id. */
  object: string;
  id: string;
  /** False: the provider answered that the object does not exist. */
  found: boolean;
  state?: Readonly<Record<string, string | number | boolean | null>>;
  readAt: string;
}

/** What a state reader needs of a claimed inbox event. */
export interface EventToConfirm {
  endpointId: string;
  eventType: string;
  /** The verified body, parsed (null once purged). */
  payload: any;
}

/** The object an event asks to act on, to be read before its transition. */
export interface ReadSubject {
  object: string;
  id: string;
}

/**
 * Reads the current state of what an event is about from the provider's API,
 * before a high-impact transition (Stripe: the PaymentIntent before `paid`, the
 * Charge before `refunded`). One class per provider, registered with
 * @StateReaderFor; the handler of the event decides from the reading.
 */
export interface ProviderStateReader {
  /** The object to read for `event`, or undefined when this event type needs no read. */
  subject(event: EventToConfirm): ReadSubject | undefined;
  /**
   * Resolves with the provider's answer (`found: false` when it says the object does
   * not exist); throws ProviderUnavailableError when there was no answer.
   */
  read(endpoint: EndpointConfig, event: EventToConfirm, subject: ReadSubject): Promise<ProviderReading>;
}

export const STATE_READER_PROVIDER = 'webhook-inbox:state-reader-provider';

/** Registers a class as the state reader of the provider named in the endpoints file's `provider` field. */
export const StateReaderFor = (provider: string) => applyDecorators(Injectable(), SetMetadata(STATE_READER_PROVIDER, provider));
