import { Injectable } from '@nestjs/common';

/**
 * 9999-12-31T23:59:59.999Z: the latest instant toISOString() and PostgreSQL both
 * spell as a plain four-digit year. Times from outside (a provider's event time,
 * a list cursor) beyond it are refused.
 */
export const LATEST_INSTANT_MS = 253_402_300_799_999;

/** The time source: tests replace it to move time without sleeping. */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}
