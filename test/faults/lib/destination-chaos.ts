import { Fault, FakeDestination } from '../../support/fake-destinations';

export interface ChaosEntry {
  label: string;
  weight: number;
  fault: Fault;
}

/**
 * Programmable misbehaviour of a fake destination: a weighted mix of faults
 * while enabled, and downtime windows during which every request is reset or
 * refused with 503. Counts what it injected, by label.
 */
export class DestinationChaos {
  readonly injected: Record<string, number> = {};
  enabled = false;
  private downUntil = 0;
  private downCount = 0;

  constructor(
    readonly fake: FakeDestination,
    private readonly random: () => number,
    private readonly posts: ChaosEntry[],
    private readonly queries: ChaosEntry[] = [],
  ) {
    fake.policy = ({ isQuery }) => this.pick(isQuery ? this.queries : this.posts);
  }

  /** Every request fails for `ms` (the destination is down). */
  downFor(ms: number): void {
    this.downUntil = Date.now() + ms;
  }

  get down(): boolean {
    return Date.now() < this.downUntil;
  }

  private pick(mix: ChaosEntry[]): Fault | undefined {
    if (this.down) {
      const fault: Fault = this.downCount++ % 2 ? { kind: 'reset' } : { kind: 'status', status: 503 };
      this.count('downtime');
      return fault;
    }
    if (!this.enabled) return undefined;
    let r = this.random();
    for (const entry of mix) {
      if (r < entry.weight) {
        this.count(entry.label);
        return entry.fault;
      }
      r -= entry.weight;
    }
    return undefined;
  }

  private count(label: string): void {
    this.injected[label] = (this.injected[label] ?? 0) + 1;
  }
}

export const ERP_MIX: ChaosEntry[] = [
  { label: '500', weight: 0.08, fault: { kind: 'status', status: 500 } },
  { label: '500-after-apply', weight: 0.03, fault: { kind: 'status', status: 500, apply: true } },
  { label: 'reset', weight: 0.05, fault: { kind: 'reset' } },
  { label: 'apply-then-reset', weight: 0.04, fault: { kind: 'applyThenReset' } },
  { label: 'apply-then-timeout', weight: 0.04, fault: { kind: 'applyThenHang' } },
  { label: '429', weight: 0.05, fault: { kind: 'status', status: 429, headers: { 'Retry-After': '1' } } },
  { label: 'slow', weight: 0.03, fault: { kind: 'slow', ms: 300 } },
];

export const ERP_QUERY_MIX: ChaosEntry[] = [
  { label: 'query-500', weight: 0.1, fault: { kind: 'status', status: 500 } },
  { label: 'query-reset', weight: 0.05, fault: { kind: 'reset' } },
];

export const EMAIL_MIX: ChaosEntry[] = [
  { label: '500', weight: 0.05, fault: { kind: 'status', status: 500 } },
  { label: 'reset', weight: 0.03, fault: { kind: 'reset' } },
  { label: 'apply-then-reset', weight: 0.03, fault: { kind: 'applyThenReset' } },
  { label: 'apply-then-timeout', weight: 0.02, fault: { kind: 'applyThenHang' } },
  { label: '429', weight: 0.03, fault: { kind: 'status', status: 429, headers: { 'Retry-After': '1' } } },
];
