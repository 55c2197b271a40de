import { Injectable } from '@nestjs/common';

/** The time source: tests replace it to move time without sleeping. */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}
