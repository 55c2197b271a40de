import { describe, expect, it } from 'vitest';
import type { SeriesPoint } from '../src/api';
import { gaugeLine, perMinuteLine, summarize, times } from '../src/series';

const point = (at: string, accepted: number, backlog: number | null): SeriesPoint => ({
  at,
  counts: { accepted, done: 0, quarantined: 0, delivered: 0, failed: 0 },
  backlog,
  oldestPendingAgeSeconds: null,
});

describe('chart data', () => {
  const points = [
    point('2026-12-06T10:00:00.000Z', 50, 3),
    point('2026-12-06T10:10:00.000Z', 120, null),
    point('2026-12-06T10:20:00.000Z', 30, 7),
  ];

  it('turns counts per bucket into rates per minute', () => {
    expect(perMinuteLine(points, 'accepted', 600, 'accepted', '#000').values).toEqual([5, 12, 3]);
    expect(times(points)).toEqual([1796551200, 1796551800, 1796552400]);
  });

  it('keeps a bucket without a backlog sample as a gap, not a zero', () => {
    expect(gaugeLine(points, (p) => p.backlog, 'backlog', '#000').values).toEqual([3, null, 7]);
  });

  it('says in words what the chart shows: latest, peak and when, mean', () => {
    const xs = times(points);
    const text = summarize(
      xs,
      [perMinuteLine(points, 'accepted', 600, 'accepted', '#000'), gaugeLine(points, (p) => p.backlog, 'backlog', '#000')],
      '/min',
      false,
    );
    expect(text).toBe(
      'accepted: latest 3/min, peak 12/min at 10:10 UTC, mean 6.7/min. backlog: latest 7/min, peak 7/min at 10:20 UTC, mean 5/min.',
    );
    expect(summarize(xs, [gaugeLine(points, () => null, 'age', '#000')], ' s', true)).toBe('age: no data.');
  });
});
