import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig, WorkLimits } from '../config/app-config';
import { inScope, TenantScope } from '../common/tenant-scope';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';
import { IN_FLIGHT, IN_FLIGHT_OF } from './inbox.queries';
import { InboxRepository } from './inbox.repository';
import { InboxEvent } from './inbox.types';

export type LimitKind = 'tenant' | 'endpoint';

/** One tenant's or endpoint's limit, resolved: `burst` set whenever `perSecond` is. */
export interface KeyLimit {
  kind: LimitKind;
  name: string;
  concurrency?: number;
  perSecond?: number;
  burst?: number;
}

/** A limited key now, for /admin/stats and the metrics: its events processing on every instance, due, and its rate's tokens. */
export interface KeyLimitState extends KeyLimit {
  tenantId: string;
  inFlight: number;
  due: number;
  tokens?: number;
}

interface BucketRow {
  key: string;
  tokens: number;
  refilled_at: Date;
  now: Date;
}

/** Counting a key's due rows stops here: the figure is "at least", and the count stays cheap under a burst. */
const DUE_COUNT_CAP = 100_000;
/** How long a claim waits for another instance's claim to release the buckets before it takes nothing this time. */
const BUCKET_LOCK_TIMEOUT_MS = 2_000;
const BUCKET_LOCK_RETRY_MS = 100;
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * The worker's optional limits per tenant and per endpoint (issue 34): at most `concurrency`
 * events processing at once and `perSecond` started per second, over every instance.
 *
 * Shared the way a destination's rate limit is, through a row per key (`worker_limit_buckets`):
 * a claim of a worker with limits locks its keys' rows (in key order: no deadlock between
 * instances), refills their tokens, claims with LIMITED_CLAIM (which counts each key's events
 * in `processing` itself, after the lock, so two instances' claims never both take the last
 * place), and spends the tokens of what it took, in one transaction. Only workers with limits
 * pay this (1.04-1.14x the plain claim, measured in docs/performance.md); without limits
 * the claim is the plain CLAIM. A new event of a limited key is never handed over at its
 * insert (`takes`): it waits for a limited claim.
 */
@Injectable()
export class WorkerLimits {
  readonly keys: readonly KeyLimit[];
  /** `keys`' rows in worker_limit_buckets, in the same (the locking) order. */
  private readonly bucketKeys: readonly string[];
  private readonly byBucket: ReadonlyMap<string, KeyLimit>;
  private readonly limitedTenants: ReadonlySet<string>;
  private readonly limitedEndpoints: ReadonlySet<string>;
  private readonly tenantOf = new Map<string, string>();
  /** Set by each claim: in how many milliseconds a key held back by its rate (or the buckets' lock) may go on; undefined: none waits. */
  wakeInMs?: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly repository: InboxRepository,
  ) {
    const keys: KeyLimit[] = [];
    for (const [tenant, limits] of config.tenantLimits) keys.push(keyLimit('tenant', tenant, limits));
    for (const endpoint of config.endpoints.values()) {
      this.tenantOf.set(endpoint.id, endpoint.tenantId);
      if (endpoint.limits) keys.push(keyLimit('endpoint', endpoint.id, endpoint.limits));
    }
    this.keys = keys.sort((a, b) => (bucketKey(a) < bucketKey(b) ? -1 : 1));
    this.bucketKeys = this.keys.map(bucketKey);
    this.byBucket = new Map(this.keys.map((k) => [bucketKey(k), k]));
    this.limitedTenants = new Set(keys.filter((k) => k.kind === 'tenant').map((k) => k.name));
    this.limitedEndpoints = new Set(keys.filter((k) => k.kind === 'endpoint').map((k) => k.name));
  }

  get any(): boolean {
    return this.keys.length > 0;
  }

  /** Whether an event of this tenant and endpoint may be handed over at its insert (no limit covers it). */
  readonly takes = (tenantId: string, endpointId: string): boolean => !this.limited(tenantId, endpointId);

  /** Whether a limit covers this event: when it settles, a place of its key frees. */
  readonly covers = (e: InboxEvent): boolean => this.limited(e.tenantId, e.endpointId);

  private limited(tenantId: string, endpointId: string): boolean {
    return this.limitedTenants.has(tenantId) || this.limitedEndpoints.has(endpointId);
  }

  /**
   * The limited claim: locks the keys' buckets, claims within their budgets, spends their tokens; one
   * transaction. When another instance holds the buckets longer than BUCKET_LOCK_TIMEOUT_MS (stalled
   * mid-claim), this claim takes nothing and the worker comes back soon (`wakeInMs`).
   */
  async claim(lease: string, now: Date, limit: number, leaseMs: number): Promise<InboxEvent[]> {
    try {
      return await runInTransaction(this.dataSource, (tx) => this.claimIn(tx, lease, now, limit, leaseMs));
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
      this.wakeInMs = BUCKET_LOCK_RETRY_MS;
      return [];
    }
  }

  private async claimIn(tx: UnitOfWork, lease: string, now: Date, limit: number, leaseMs: number): Promise<InboxEvent[]> {
    await tx.query(`SET LOCAL lock_timeout = ${BUCKET_LOCK_TIMEOUT_MS}`);
    let rows = await this.lockBuckets(tx);
    if (rows.length < this.keys.length) {
      // The first claim with these keys (or a row deleted by hand): the missing buckets start full.
      await tx.query(
        `INSERT INTO worker_limit_buckets (key, tokens) SELECT * FROM unnest($1::text[], $2::float8[]) ON CONFLICT (key) DO NOTHING`,
        [this.bucketKeys, this.keys.map((k) => k.burst ?? 0)],
      );
      rows = await this.lockBuckets(tx);
    }
    const buckets = new Map(rows.map((r) => [r.key, refill(r, this.byBucket.get(r.key)!)]));
    // A bucket still missing counts as empty, never as unlimited.
    const tokens = this.keys.map((k) =>
      k.perSecond === undefined ? null : Math.max(0, Math.floor(buckets.get(bucketKey(k))?.tokens ?? 0)),
    );
    const concurrency = this.keys.map((k) => (k.concurrency === undefined ? null : buckets.has(bucketKey(k)) ? k.concurrency : 0));
    const events = await this.repository.claimLimited(tx, lease, now, limit, leaseMs, {
      kinds: this.keys.map((k) => k.kind),
      names: this.keys.map((k) => k.name),
      concurrency,
      tokens,
    });
    const spent = this.keys.filter((k) => k.perSecond !== undefined && buckets.has(bucketKey(k)));
    const left = spent.map((k) => buckets.get(bucketKey(k))!.tokens - events.filter((e) => keyCovers(k, e)).length);
    if (spent.length > 0) {
      // refilled_at never goes back: a claim that waited for the lock read its now() before the claim it waited for wrote.
      void tx.send({
        name: 'worker_limits_spend',
        text: `UPDATE worker_limit_buckets b SET tokens = v.tokens, refilled_at = greatest(b.refilled_at, $3)
                 FROM unnest($1::text[], $2::float8[]) AS v(key, tokens) WHERE b.key = v.key`,
        values: [spent.map(bucketKey), left, rows[0].now],
      });
    }
    // A rate that ran out while its key had events to start: come back when its next token is in.
    const waits = spent.flatMap((k, n) =>
      left[n] < 1 && events.some((e) => keyCovers(k, e)) ? [((1 - left[n]) / k.perSecond!) * 1000] : [],
    );
    this.wakeInMs = waits.length > 0 ? Math.ceil(Math.min(...waits)) : undefined;
    return events;
  }

  private lockBuckets(tx: UnitOfWork): Promise<BucketRow[]> {
    return tx.query<BucketRow[]>(
      `SELECT key, tokens, refilled_at, now() AS now FROM worker_limit_buckets WHERE key = ANY($1) ORDER BY key FOR UPDATE`,
      [this.bucketKeys],
    );
  }

  /** Every limited key of `scope`'s tenants now: limits, events processing, due, tokens. */
  async state(scope: TenantScope): Promise<KeyLimitState[]> {
    const keys = this.keys.filter((k) => inScope(scope, this.tenantOfKey(k)));
    if (keys.length === 0) return [];
    const rows = await this.dataSource.query<
      { in_flight: number; due: number; tokens: number | null; refilled_at: Date | null; now: Date }[]
    >(
      `WITH ${IN_FLIGHT}
       SELECT ${IN_FLIGHT_OF('l')} AS in_flight,
              (SELECT count(*)::int FROM (SELECT 1 FROM webhook_inbox i
                WHERE i.status = 'pending' AND i.tenant_id = l.tenant AND i.next_attempt_at <= now()
                  AND (l.kind = 'tenant' OR i.endpoint_id = l.name) LIMIT ${DUE_COUNT_CAP}) d) AS due,
              b.tokens, b.refilled_at, now() AS now
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS l(kind, name, tenant, n)
         LEFT JOIN worker_limit_buckets b ON b.key = l.kind || ':' || l.name
        ORDER BY l.n`,
      [keys.map((k) => k.kind), keys.map((k) => k.name), keys.map((k) => this.tenantOfKey(k))],
    );
    return keys.map((k, i) => {
      const r = rows[i];
      const tokens =
        k.perSecond === undefined
          ? undefined
          : r.tokens === null
            ? k.burst!
            : refill({ ...r, tokens: r.tokens, refilled_at: r.refilled_at! }, k).tokens;
      return {
        ...k,
        tenantId: this.tenantOfKey(k),
        inFlight: r.in_flight,
        due: r.due,
        tokens: tokens === undefined ? undefined : Math.max(0, tokens),
      };
    });
  }

  private tenantOfKey(k: KeyLimit): string {
    return k.kind === 'tenant' ? k.name : this.tenantOf.get(k.name)!;
  }
}

function keyLimit(kind: LimitKind, name: string, limits: WorkLimits): KeyLimit {
  const burst = limits.perSecond === undefined ? undefined : (limits.burst ?? Math.max(1, Math.ceil(limits.perSecond)));
  return { kind, name, concurrency: limits.concurrency, perSecond: limits.perSecond, burst };
}

function bucketKey(k: { kind: LimitKind; name: string }): string {
  return `${k.kind}:${k.name}`;
}

function keyCovers(k: KeyLimit, e: InboxEvent): boolean {
  return k.kind === 'tenant' ? e.tenantId === k.name : e.endpointId === k.name;
}

/** The bucket at the database's now: tokens refilled at the key's rate since the last write, up to its burst (never back in time). */
function refill(r: { tokens: number; refilled_at: Date; now: Date }, k: KeyLimit): { tokens: number } {
  const elapsed = Math.max(0, (r.now.getTime() - r.refilled_at.getTime()) / 1000);
  return { tokens: k.perSecond === undefined ? r.tokens : Math.min(k.burst!, r.tokens + elapsed * k.perSecond) };
}
