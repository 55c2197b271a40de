import type { ActivityCount } from '../common/activity';

export type ActivityKind = 'endpoint' | 'destination';

/** The chart windows and their bucket widths: 60, 144 and 168 points. */
export const WINDOWS = {
  '1h': { ms: 3_600_000, stepSeconds: 60 },
  '24h': { ms: 86_400_000, stepSeconds: 600 },
  '7d': { ms: 604_800_000, stepSeconds: 3_600 },
} as const;

export type ActivityWindow = keyof typeof WINDOWS;

/** One bucket: counts in it, and the worst backlog and oldest pending age seen (null: none sampled). */
export interface SeriesPoint {
  at: Date;
  counts: Record<ActivityCount, number>;
  backlog: number | null;
  oldestPendingAgeSeconds: number | null;
}
