/**
 * The console's only way into the product: the public admin API, with the
 * operator's token as a Bearer header. Every failure becomes an ApiError that
 * carries the API's stable `reason`, so a page can always say what went wrong.
 */

export type Role = 'viewer' | 'operator';

export interface Session {
  name: string;
  role: Role;
  /** Present when the token is limited to some tenants. */
  tenants?: string[] | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface InboxEvent {
  id: string;
  sourceScope: string;
  eventId: string;
  tenantId: string;
  provider: string;
  endpointId: string;
  eventType: string;
  status: string;
  statusReason: string | null;
  payloadSha256: string;
  verifiedWith: string;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  receivedAt: string;
  completedAt: string | null;
  deliveries: number;
  lastDeliveryAt: string;
  digestConflicts: number;
  payloadPurged: boolean;
  payload?: unknown;
}

export interface OutboxEntry {
  id: string;
  operationKey: string;
  destination: string;
  operationType: string;
  tenantId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  lastStatusCode: number | null;
  outcomeUnknown: boolean;
  sourceEventId: string | null;
  createdAt: string;
  deliveredAt: string | null;
  /** A pending entry waiting for this earlier entry of its order (same destination). */
  heldBy?: string | null;
}

export interface AuditRecord {
  id: string;
  actor: string;
  role: string;
  action: string;
  target: string;
  reason: string;
  beforeStatus: string | null;
  afterStatus: string | null;
  details: Record<string, unknown> | null;
  at: string;
}

export interface Order {
  tenantId: string;
  id: string;
  status: string;
  providerPaymentId: string | null;
  totalMinor: number;
  currency: string;
  customerEmail?: string;
  lastPaymentError: string | null;
  createdAt: string;
  updatedAt: string;
}

export type TimelineKind = 'received' | 'redelivered' | 'attempt' | 'order_transition' | 'operation_created' | 'delivery_attempt' | 'operator_action';

export interface TimelineEntry {
  at: string;
  kind: TimelineKind;
  detail: Record<string, string | number | boolean | null>;
}

export interface Timeline {
  event: InboxEvent;
  entries: TimelineEntry[];
  operations: OutboxEntry[];
}

export interface EndpointStats {
  endpoint: string;
  pending: number;
  processing: number;
  quarantined: number;
  acceptedPerMinute: number;
}

export interface Stats {
  at: string;
  inbox: {
    byStatus: Record<string, number>;
    oldestPendingAgeSeconds: number;
    quarantined: number;
    retrying: number;
    acceptToDoneSeconds: { completed: number; p50: number | null; p95: number | null; p99: number | null };
  };
  outbox: {
    byStatus: Record<string, number>;
    oldestPendingAgeSeconds: number;
    unresolved: number;
    dead: number;
  };
  rates?: { windowSeconds: number; acceptedPerMinute: number; donePerMinute: number; deliveredPerMinute: number };
  byEndpoint?: EndpointStats[];
}

export type ChartWindow = '1h' | '24h' | '7d';
export type ActivityCount = 'accepted' | 'done' | 'quarantined' | 'delivered' | 'failed';

export interface SeriesPoint {
  at: string;
  counts: Record<ActivityCount, number>;
  backlog: number | null;
  oldestPendingAgeSeconds: number | null;
}

export interface Series {
  window: ChartWindow;
  stepSeconds: number;
  from: string;
  to: string;
  inbox: SeriesPoint[];
  outbox: SeriesPoint[];
  endpoints: string[];
  destinations: string[];
}

export interface Destination {
  name: string;
  registered: boolean;
  origin: string | null;
  settings: { concurrency: number; circuit: Record<string, number>; rateLimit: { perSecond?: number; burst?: number } | null } | null;
  circuit: { state: 'closed' | 'open' | 'half_open'; failures: number; retryAt: string | null; probeUntil: string | null };
  pausedUntil: string | null;
  paused: boolean;
  lastError: string | null;
  changedAt: string | null;
  backlog: { pending: number; held: number; delivering: number; unresolved: number; dead: number };
}

export interface ReconciliationRun {
  id: string;
  endpointId: string;
  requestedBy: string;
  reason: string;
  dryRun: boolean;
  windowFrom: string | null;
  windowTo: string | null;
  status: 'requested' | 'running' | 'succeeded' | 'failed';
  listed: number;
  foundMissing: number;
  accepted: number;
  duplicates: number | null;
  ignored: number | null;
  invalid: number | null;
  byReason: Record<string, number> | null;
  apiCalls: number;
  error: string | null;
  requestedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface EndpointReconciliation {
  endpointId: string;
  provider: string;
  scheduled: boolean;
  intervalSeconds: number | null;
  lookbackHours: number;
  cursor: string | null;
  lastSuccessAt: string | null;
  lastRun: ReconciliationRun | null;
  recentRuns: ReconciliationRun[];
}

export type ErasureTarget = { email: string } | { tenantId: string; orderId: string };

export interface ErasureResult {
  dryRun: boolean;
  orders: { tenantId: string; orderId: string }[];
  outboxEntries: number;
  recipientsBlanked: number;
  payloadsPurged: number;
  payloadsRedacted: number;
  unreadable: unknown[];
  complete: boolean;
  auditId: string | null;
}

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
  inbox = (query: Query) => this.get<Page<InboxEvent>>(`/admin/inbox${queryString(query)}`);
  event = (id: string) => this.get<InboxEvent>(`/admin/inbox/${encodeURIComponent(id)}`);
  timeline = (id: string) => this.get<Timeline>(`/admin/inbox/${encodeURIComponent(id)}/timeline`);
  replay = (id: string, reason: string) => this.post(`/admin/inbox/${encodeURIComponent(id)}/replay`, { reason });
  quarantine = (id: string, reason: string) => this.post(`/admin/inbox/${encodeURIComponent(id)}/quarantine`, { reason });
  bulkReplay = (filter: Record<string, string>, dryRun: boolean, reason: string) =>
    this.post<{ count: number; dryRun: boolean; batches: number }>('/admin/inbox/replay', { filter, dryRun, reason });
  outbox = (query: Query) => this.get<Page<OutboxEntry>>(`/admin/outbox${queryString(query)}`);
  retry = (id: string, reason: string) => this.post(`/admin/outbox/${encodeURIComponent(id)}/retry`, { reason });
  resolve = (id: string, outcome: 'delivered' | 'retry', reason: string) =>
    this.post(`/admin/outbox/${encodeURIComponent(id)}/resolve`, { outcome, reason });
  order = (tenant: string, id: string) => this.get<Order>(`/admin/orders/${encodeURIComponent(tenant)}/${encodeURIComponent(id)}`);
  series = (query: { window: ChartWindow; endpoint?: string; destination?: string }) => this.get<Series>(`/admin/series${queryString(query)}`);
  destinations = () => this.get<{ items: Destination[] }>('/admin/destinations');
  reconciliation = () => this.get<{ endpoints: EndpointReconciliation[] }>('/admin/reconciliation');
  runReconciliation = (body: { endpoint?: string; from?: string; dryRun: boolean; reason: string }) =>
    this.post<{ runs: { id: string; endpointId: string }[]; skipped: { endpointId: string; reason: string }[] }>('/admin/reconciliation/run', body);
  erase = (target: ErasureTarget, reason: string, dryRun: boolean) => this.post<ErasureResult>('/admin/erasure', { ...target, reason, dryRun });
  audit = (query: Query) => this.get<Page<AuditRecord>>(`/admin/audit${queryString(query)}`);

  private get<T>(path: string): Promise<T> {
    return this.request<T>(path, { method: 'GET' });
  }

  private post<T = unknown>(path: string, body: unknown): Promise<T> {
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
