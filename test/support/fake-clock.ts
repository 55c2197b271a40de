import { Clock } from '../../src/common/clock';

/** A clock that runs with real time plus an offset the test can move. */
export class FakeClock extends Clock {
  offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
