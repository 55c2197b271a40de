import type { DestinationSettings as AllSettings } from '../../config/destinations';
import { admit, giveBack, initialState, report } from './destination-gate';

type DestinationSettings = Pick<AllSettings, 'circuit' | 'rateLimit'>;

const settings: DestinationSettings = { circuit: { failures: 3, cooldownMs: 1000 } };
const limited: DestinationSettings = { ...settings, rateLimit: { perSecond: 10, burst: 5 } };
const at = (ms: number) => new Date(Date.UTC(2026, 11, 1) + ms);
const LEASE = 5000;

describe('destination gate (pure)', () => {
  it('a closed circuit grants what is wanted and writes nothing', () => {
    expect(admit(initialState('erp'), settings, at(0), 64, LEASE)).toEqual({
      grant: 64,
      probe: false,
      next: undefined,
      transition: undefined,
    });
  });

  it('opens after N consecutive down answers, not before; an answer resets the count', () => {
    let s = initialState('erp');
    s = report(s, settings, at(0), { answered: 0, down: 2 }).next!;
    expect(s).toMatchObject({ circuit: 'closed', failures: 2 });
    expect(report(s, settings, at(0), { answered: 1, down: 5 }).next).toMatchObject({ circuit: 'closed', failures: 0 });
    const opened = report(s, settings, at(10), { answered: 0, down: 1 });
    expect(opened.transitions).toEqual(['opened']);
    expect(opened.next).toMatchObject({ circuit: 'open', retryAt: at(1010) });
  });

  it('open: nothing until the cool-down ends, then exactly one probe (the writer that wins the row)', () => {
    const open = { ...initialState('erp'), circuit: 'open' as const, retryAt: at(1000) };
    expect(admit(open, settings, at(999), 64, LEASE)).toEqual({ grant: 0, probe: false });
    const probe = admit(open, settings, at(1000), 64, LEASE);
    expect(probe).toMatchObject({ grant: 1, probe: true, transition: 'half_open', next: { circuit: 'half_open', probeUntil: at(6000) } });
    // Another instance reading the half-open row while the probe is in flight gets nothing.
    expect(admit(probe.next!, settings, at(1500), 64, LEASE)).toEqual({ grant: 0, probe: false });
    // The probe's relay died: after its lease another probe may go.
    expect(admit(probe.next!, settings, at(6000), 64, LEASE)).toMatchObject({ grant: 1, probe: true });
  });

  it('the probe decides: an answer closes, a down answer opens for another cool-down', () => {
    const half = { ...initialState('erp'), circuit: 'half_open' as const, probeUntil: at(6000), failures: 3 };
    expect(report(half, settings, at(2000), { answered: 1, down: 0 })).toMatchObject({
      transitions: ['closed'],
      next: { circuit: 'closed', failures: 0, probeUntil: null },
    });
    expect(report(half, settings, at(2000), { answered: 0, down: 1 })).toMatchObject({
      transitions: ['reopened'],
      next: { circuit: 'open', retryAt: at(3000) },
    });
  });

  it('nothing to hand back (no probe, no rate limit) writes nothing', () => {
    expect(giveBack(initialState('erp'), settings, 60, false)).toBeUndefined();
  });

  it('an unused probe is handed back so the next round (or instance) may probe at once', () => {
    const half = { ...initialState('erp'), circuit: 'half_open' as const, probeUntil: at(6000) };
    const back = giveBack(half, settings, 1, true)!;
    expect(admit(back, settings, at(1001), 64, LEASE)).toMatchObject({ grant: 1, probe: true });
  });

  it('Retry-After pauses the destination (extends, never shortens), capped at an hour', () => {
    const paused = report(initialState('erp'), settings, at(0), { answered: 1, down: 0, retryAfterMs: 5000 });
    expect(paused).toMatchObject({ transitions: ['paused'], next: { pausedUntil: at(5000) } });
    expect(admit(paused.next!, settings, at(4999), 64, LEASE)).toEqual({ grant: 0, probe: false });
    expect(admit(paused.next!, settings, at(5000), 64, LEASE).grant).toBe(64);
    expect(report(paused.next!, settings, at(1000), { answered: 1, down: 0, retryAfterMs: 1000 }).next).toBeUndefined();
    expect(report(initialState('erp'), settings, at(0), { answered: 1, down: 0, retryAfterMs: 86_400_000 }).next!.pausedUntil).toEqual(
      at(3600_000),
    );
  });

  it('the token bucket: burst first, then the rate; handed-back tokens count again', () => {
    const first = admit(initialState('erp'), limited, at(0), 64, LEASE);
    expect(first.grant).toBe(5);
    expect(admit(first.next!, limited, at(50), 64, LEASE).grant).toBe(0);
    const later = admit(first.next!, limited, at(300), 64, LEASE);
    expect(later.grant).toBe(3);
    const back = giveBack(later.next!, limited, 2, false)!;
    expect(admit(back, limited, at(300), 64, LEASE).grant).toBe(2);
  });

  it('the token bucket holds its rate across instances whose clocks differ by 5 s', () => {
    // Two instances take turns every 50 ms, one 5 s ahead; 50 entries a second are due.
    const run = (skewMs: number): number => {
      let state = initialState('erp');
      let granted = 0;
      let due = 0;
      for (let ms = 0; ms < 10_000; ms += 50) {
        due += 2.5;
        const round = admit(state, limited, at(ms + ((ms / 50) % 2 === 0 ? skewMs : 0)), 64, LEASE);
        if (round.next) state = round.next;
        const claimed = Math.min(round.grant, Math.floor(due));
        due -= claimed;
        granted += claimed;
        state = giveBack(state, limited, round.grant - claimed, round.probe) ?? state;
      }
      return granted;
    };
    // 10 s at 10/s and a burst of 5, with or without the difference (before the fix: 500 with it).
    expect(run(0)).toBeLessThanOrEqual(105);
    expect(run(5000)).toBeLessThanOrEqual(105);
  });
});
