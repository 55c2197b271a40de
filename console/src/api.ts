/**
 * The console's only way into the product: the public admin API, with the
 * operator's token as a Bearer header. Every failure becomes an ApiError that
 * carries the API's stable `reason`, so a page can always say what went wrong.
 */

import type { components } from './api.generated';

// The admin API's answers, generated from its OpenAPI document into api.generated.ts
// (`npm run console:api-types`; a server test fails while that file is stale).
type Schemas = components['schemas'];

export type Session = Schemas['Session'];
export type Role = Session['role'];
export type InboxEvent = Schemas['InboxEvent'];
export type InboxStatusChange = Schemas['InboxStatusChange'];
export type BulkReplayResult = Schemas['BulkReplayResult'];
export type OutboxEntry = Schemas['OutboxEntry'];
export type OutboxStatusChange = Schemas['OutboxStatusChange'];
export type AuditRecord = Schemas['AuditRecord'];
export type Order = Schemas['Order'];
export type TimelineEntry = Schemas['TimelineEntry'];
export type TimelineKind = TimelineEntry['kind'];
export type Timeline = Schemas['Timeline'];
export type EndpointStats = Schemas['EndpointStats'];
export type Stats = Schemas['Stats'];
export type Series = Schemas['Series'];
export type SeriesPoint = Schemas['SeriesPoint'];
export type ChartWindow = Series['window'];
export type ActivityCount = keyof SeriesPoint['counts'];
export type Destination = Schemas['Destination'];
export type ReconciliationRun = Schemas['ReconciliationRun'];
export type EndpointReconciliation = Schemas['EndpointReconciliation'];
export type ErasureResult = Schemas['ErasureResult'];
export type EffectPreview = Schemas['EffectPreview'];
export type Rejection = Schemas['Rejection'];

/** Whose data the erasure form names: the request body's two alternatives. */
export type ErasureTarget = { email: string } | { tenantId: string; orderId: string };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

type Query = Record<string, string | number | boolean | undefined | null>;

/** `?a=1&b=x` of the set values only, in a stable order (an unset filter is left out, never sent empty). */
export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') continue;
    params.set(key, String(value));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

export class Api {
  constructor(
    private readonly token: string,
    private readonly fetchImpl: Fetch = (input, init) => fetch(input, init),
  ) {}

  session = () => this.get<Session>('/admin/session');
  stats = () => this.get<Stats>('/admin/stats');
  inbox = (query: Query) => this.get<Schemas['InboxEventPage']>(`/admin/inbox${queryString(query)}`);
  event = (id: string) => this.get<InboxEvent>(`/admin/inbox/${encodeURIComponent(id)}`);
  timeline = (id: string) => this.get<Timeline>(`/admin/inbox/${encodeURIComponent(id)}/timeline`);
  replay = (id: string, reason: string) => this.post<InboxStatusChange>(`/admin/inbox/${encodeURIComponent(id)}/replay`, { reason });
  preview = (id: string) => this.post<EffectPreview>(`/admin/inbox/${encodeURIComponent(id)}/preview`, {});
  quarantine = (id: string, reason: string) =>
    this.post<InboxStatusChange>(`/admin/inbox/${encodeURIComponent(id)}/quarantine`, { reason });
  bulkReplay = (filter: Record<string, string>, dryRun: boolean, reason: string) =>
    this.post<BulkReplayResult>('/admin/inbox/replay', { filter, dryRun, reason });
  outbox = (query: Query) => this.get<Schemas['OutboxEntryPage']>(`/admin/outbox${queryString(query)}`);
  retry = (id: string, reason: string) => this.post<OutboxStatusChange>(`/admin/outbox/${encodeURIComponent(id)}/retry`, { reason });
  resolve = (id: string, outcome: 'delivered' | 'retry', reason: string) =>
    this.post<OutboxStatusChange>(`/admin/outbox/${encodeURIComponent(id)}/resolve`, { outcome, reason });
  order = (tenant: string, id: string) => this.get<Order>(`/admin/orders/${encodeURIComponent(tenant)}/${encodeURIComponent(id)}`);
  series = (query: { window: ChartWindow; endpoint?: string; destination?: string }) =>
    this.get<Series>(`/admin/series${queryString(query)}`);
  destinations = () => this.get<Schemas['DestinationList']>('/admin/destinations');
  reconciliation = () => this.get<Schemas['ReconciliationOverview']>('/admin/reconciliation');
  runReconciliation = (body: { endpoint?: string; from?: string; dryRun: boolean; reason: string }) =>
    this.post<Schemas['ReconciliationRequested']>('/admin/reconciliation/run', body);
  erase = (target: ErasureTarget, reason: string, dryRun: boolean) =>
    this.post<ErasureResult>('/admin/erasure', { ...target, reason, dryRun });
  audit = (query: Query) => this.get<Schemas['AuditRecordPage']>(`/admin/audit${queryString(query)}`);
  rejections = (query: Query) => this.get<Schemas['RejectionPage']>(`/admin/rejections${queryString(query)}`);

  private get<T>(path: string): Promise<T> {
    return this.request<T>(path, { method: 'GET' });
  }

  private post<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  }

  private async request<T>(path: string, init: RequestInit): Promise<T> {
    const headers = { ...(init.headers as Record<string, string>), authorization: `Bearer ${this.token}`, accept: 'application/json' };
    let res: Response;
    try {
      res = await this.fetchImpl(path, { ...init, headers, credentials: 'omit', cache: 'no-store' });
    } catch {
      throw new ApiError(0, 'network_error', 'the service could not be reached');
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const b = (body ?? {}) as { reason?: unknown; message?: unknown };
      const reason = typeof b.reason === 'string' ? b.reason : `http_${res.status}`;
      const message = typeof b.message === 'string' ? b.message : res.statusText || 'request failed';
      throw new ApiError(res.status, reason, message);
    }
    return body as T;
  }
}

/** What to show for any failure: the API's reason first, as the API spelled it. */
export function describeError(error: unknown): { reason: string; message: string } {
  if (error instanceof ApiError) return { reason: error.reason, message: error.message };
  return { reason: 'console_error', message: error instanceof Error ? error.message : String(error) };
}
