import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { describe } from '../common/error-response';
import { Page, PageRequest, queryPage, SqlWhere } from '../common/pagination';
import { TenantScope } from '../common/tenant-scope';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { IngestionMetrics } from './ingestion.metrics';
import { intakeClientOf } from './intake-client';
import { INSERT_REJECTIONS, PRUNE_REJECTIONS, REJECTION_COLUMNS, TRIM_REJECTIONS } from './rejection-log.queries';

/** Kept rows are written this often, together, off the request path. */
export const REJECTION_FLUSH_MS = 1000;
/** Kept rows waiting for their flush, all endpoints together: past it a rejection is counted, not kept. */
export const REJECTION_BUFFER_MAX = 2000;

/** One refused webhook request as the log keeps it: sizes and a reason, never a header value, a body or a secret. */
export interface Rejection {
  id: string;
  at: Date;
  endpointId: string;
  tenantId: string;
  provider: string;
  /** The stable `reason` the request was answered with (invalid_signature, timestamp_out_of_tolerance, body_too_large, ...). */
  reason: string;
  httpStatus: number;
  /** The client as the intake budget sees it (INGEST_TRUSTED_PROXIES; an IPv6 client by its /64). */
  remoteAddress: string;
  /** The Content-Length the client declared, if any. */
  declaredBytes: number | null;
  /** The body bytes read before the refusal; null when it came before the body was read to its end. */
  receivedBytes: number | null;
  /** This endpoint's rejections since the row before that the log did not keep (sampling, a full buffer, a failed flush). */
  unloggedBefore: number;
}

export interface RejectionFilter {
  endpoint?: string;
  reason?: string;
  tenants?: TenantScope;
  from?: Date;
  to?: Date;
}

interface Bucket {
  tokens: number;
  refilledAtMs: number;
  /** Rejections of this endpoint not kept since its last kept row. */
  unlogged: number;
}

type Pending = Omit<Rejection, 'id'>;

/**
 * The rejected-request log (docs/operations.md). Deciding costs a token-bucket check in
 * memory per rejection (REJECTION_LOG_PER_MINUTE per endpoint and instance); kept rows wait
 * in a bounded buffer and are written by one INSERT a second, never awaited by a request,
 * so a flood of bad requests costs bounded CPU and storage and a valid request never waits
 * on the log. What the buffer holds when the process dies is lost: the log is a sample for
 * an operator, the metric webhook_requests_total counts every rejection.
 */
@Injectable()
export class RejectionLog implements OnModuleDestroy {
  private readonly logger = new Logger(RejectionLog.name);
  private readonly buckets = new Map<string, Bucket>();
  private pending: Pending[] = [];
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly metrics: IngestionMetrics,
  ) {}

  /** A refused request of `endpoint`: kept if its endpoint's bucket has a token and the buffer room. Never throws. */
  record(endpoint: EndpointConfig, reason: string, httpStatus: number, req: IncomingMessage, receivedBytes: number | null): void {
    const bucket = this.bucketOf(endpoint.id);
    if (bucket === undefined || bucket.tokens < 1 || this.pending.length >= REJECTION_BUFFER_MAX) {
      if (bucket) bucket.unlogged++;
      this.metrics.rejectionUnlogged(endpoint.id);
      return;
    }
    bucket.tokens--;
    const declared = req.headers['content-length'];
    this.pending.push({
      at: this.clock.now(),
      endpointId: endpoint.id,
      tenantId: endpoint.tenantId,
      provider: endpoint.provider,
      reason,
      httpStatus,
      remoteAddress: intakeClientOf(req.socket?.remoteAddress, req.headers['x-forwarded-for'], this.config.intake.trustedProxies),
      declaredBytes: declared !== undefined && /^\d{1,15}$/.test(declared) ? Number(declared) : null,
      receivedBytes,
      unloggedBefore: bucket.unlogged,
    });
    bucket.unlogged = 0;
    this.timer ??= setTimeout(() => void this.flush(), REJECTION_FLUSH_MS).unref();
  }

  /** Writes what the buffer holds; a failure drops it (logged and counted). Resolves once written or dropped. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    const rows = this.pending;
    if (rows.length === 0) return;
    this.pending = [];
    this.flushing = this.dataSource
      .query(INSERT_REJECTIONS, [
        rows.map((r) => r.at),
        rows.map((r) => r.endpointId),
        rows.map((r) => r.tenantId),
        rows.map((r) => r.provider),
        rows.map((r) => r.reason),
        rows.map((r) => r.httpStatus),
        rows.map((r) => r.remoteAddress),
        rows.map((r) => r.declaredBytes),
        rows.map((r) => r.receivedBytes),
        rows.map((r) => r.unloggedBefore),
      ])
      .then(
        () => undefined,
        (error: unknown) => {
          for (const r of rows) this.metrics.rejectionUnlogged(r.endpointId);
          this.logger.warn({ rows: rows.length, err: describe(error) }, 'rejected-request log: rows dropped');
        },
      )
      .finally(() => (this.flushing = undefined));
    await this.flushing;
  }

  async onModuleDestroy(): Promise<void> {
    await this.flush();
  }

  /** The admin list, newest first. */
  list(filter: RejectionFilter, page: PageRequest): Promise<Page<Rejection>> {
    const where = new SqlWhere();
    if (filter.tenants) where.add('tenant_id = ANY(?::text[])', filter.tenants);
    if (filter.endpoint) where.add('endpoint_id = ?', filter.endpoint);
    if (filter.reason) where.add('reason = ?', filter.reason);
    if (filter.from) where.add('at >= ?', filter.from);
    if (filter.to) where.add('at < ?', filter.to);
    return queryPage(
      this.dataSource,
      { columns: REJECTION_COLUMNS, table: 'webhook_rejections', orderBy: 'at', where },
      page,
      (r: RejectionRow) => ({
        id: String(r.id),
        at: r.at,
        endpointId: r.endpoint_id,
        tenantId: r.tenant_id,
        provider: r.provider,
        reason: r.reason,
        httpStatus: r.http_status,
        remoteAddress: r.remote_address,
        declaredBytes: r.declared_bytes === null ? null : Number(r.declared_bytes),
        receivedBytes: r.received_bytes,
        unloggedBefore: r.unlogged_before,
      }),
    );
  }

  /** Retention (RETENTION_REJECTION_DAYS): one batch of up to `limit` rows older than `before`. */
  async prune(before: Date, limit: number): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(PRUNE_REJECTIONS, [before, limit]);
    return rows[0].n;
  }

  /** Retention (REJECTION_LOG_MAX_ROWS): one batch of up to `limit` rows past each configured endpoint's newest ones. */
  async trimToCap(limit: number): Promise<number> {
    const endpoints = [...this.config.endpoints.keys()];
    if (endpoints.length === 0) return 0;
    const rows: { n: number }[] = await this.dataSource.query(TRIM_REJECTIONS, [
      endpoints,
      this.config.rejectionLog.maxRowsPerEndpoint,
      limit,
    ]);
    return rows[0].n;
  }

  /** The endpoint's bucket, refilled for the time since; undefined when the log is off. */
  private bucketOf(endpointId: string): Bucket | undefined {
    const perMinute = this.config.rejectionLog.perMinute;
    if (perMinute === 0) return undefined;
    const now = Date.now();
    let bucket = this.buckets.get(endpointId);
    if (!bucket) {
      bucket = { tokens: perMinute, refilledAtMs: now, unlogged: 0 };
      this.buckets.set(endpointId, bucket);
    } else {
      bucket.tokens = Math.min(perMinute, bucket.tokens + ((now - bucket.refilledAtMs) * perMinute) / 60_000);
      bucket.refilledAtMs = now;
    }
    return bucket;
  }
}

interface RejectionRow {
  id: string;
  at: Date;
  endpoint_id: string;
  tenant_id: string;
  provider: string;
  reason: string;
  http_status: number;
  remote_address: string;
  declared_bytes: string | null;
  received_bytes: number | null;
  unlogged_before: number;
  page_at_us: string;
}
