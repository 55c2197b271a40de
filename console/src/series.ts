/** Chart data from the admin API's series, and the words that stand in for a chart: pure, unit-tested. */
import type { ActivityCount, SeriesPoint } from './api';

export interface Line {
  label: string;
  values: (number | null)[];
  color: string;
}

/** Unix seconds of each bucket (uPlot's x). */
export function times(points: SeriesPoint[]): number[] {
  return points.map((p) => new Date(p.at).getTime() / 1000);
}

/** A count per bucket as a rate per minute (a bucket of 10 minutes with 50 events: 5/min). */
export function perMinuteLine(points: SeriesPoint[], count: ActivityCount, stepSeconds: number, label: string, color: string): Line {
  const minutes = stepSeconds / 60;
  return { label, color, values: points.map((p) => round(p.counts[count] / minutes)) };
}

/** The backlog or the oldest pending age; null where no snapshot was taken (a gap, not a zero). */
export function gaugeLine(points: SeriesPoint[], pick: (p: SeriesPoint) => number | null, label: string, color: string): Line {
  return { label, color, values: points.map(pick) };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** `HH:MM` (UTC) of a bucket, with the day when the window spans days. */
export function bucketLabel(seconds: number, withDay: boolean): string {
  const iso = new Date(seconds * 1000).toISOString();
  return withDay ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 16);
}

/**
 * One sentence per line for screen readers and a glance: the latest value, the peak
 * and when, and the mean over the window (sampled buckets only).
 */
export function summarize(xs: number[], lines: Line[], unit: string, withDay: boolean): string {
  return lines
    .map((line) => {
      const sampled = line.values.map((v, i) => [v, xs[i]] as const).filter((p): p is readonly [number, number] => p[0] !== null);
      if (sampled.length === 0) return `${line.label}: no data.`;
      const [latest] = sampled[sampled.length - 1];
      const [peak, peakAt] = sampled.reduce((best, p) => (p[0] > best[0] ? p : best));
      const mean = sampled.reduce((n, p) => n + p[0], 0) / sampled.length;
      return `${line.label}: latest ${fmt(latest)}${unit}, peak ${fmt(peak)}${unit} at ${bucketLabel(peakAt, withDay)} UTC, mean ${fmt(mean)}${unit}.`;
    })
    .join(' ');
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(n >= 100 ? 0 : 1);
}
