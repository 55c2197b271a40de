import type { DestinationVariables } from './destinations';
import type { TracingConfig } from './tracing-env';

export type Role = 'api' | 'worker' | 'relay' | 'maintenance';
export type AdminRole = 'viewer' | 'operator';

export interface EndpointSecret {
  label: string;
  value: string;
  /** End of the overlap window of a rotated-out secret. */
  notAfter?: Date;
}

/**
 * A provider API key. It never prints: JSON, string conversion and util.inspect
 * show a label; only reveal() gives the key, to the SDK that sends it.
 */
export class ApiKey {
  readonly #value: string;
  /** First 12 hex digits of the key's SHA-256: names the key's shared read budget without holding it. */
  readonly id: string;

  constructor(value: string, id: string) {
    this.#value = value;
    this.id = id;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return `[api key ${this.id}]`;
  }

  toString(): string {
    return this.toJSON();
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toJSON();
  }
}

export interface ReconcileSettings {
  enabled: boolean;
  intervalSeconds: number;
  lookbackHours: number;
  onlyFailedDeliveries: boolean;
}

/** The endpoint's `api` object, validated: the key read from the variable it names. */
export interface EndpointApi {
  key: ApiKey;
  /** Parsed `baseUrl`; undefined is the provider's public API. */
  baseUrl?: URL;
  /** Confirm high-impact transitions by a read (default true where the provider has a state reader). */
  confirm: boolean;
  reconcile?: ReconcileSettings;
  owner?: string;
  repo?: string;
  org?: string;
}

export interface EndpointConfig {
  id: string;
  provider: string;
  tenantId: string;
  secrets: EndpointSecret[];
  toleranceSeconds: number;
  maxBodyBytes: number;
  /** Accepted types; undefined accepts all. */
  eventTypes?: ReadonlySet<string>;
  expect?: Readonly<Record<string, string | boolean | number>>;
  api?: EndpointApi;
  /** The provider's own settings, validated by the provider at start. */
  settings?: Readonly<Record<string, unknown>>;
  /** JSON paths (dot-separated keys) dropped from the body before it is stored; the digest stays the raw bytes'. */
  omit?: readonly string[];
  /** The worker's limits for this endpoint's events (src/inbox/worker-limits.ts). */
  limits?: WorkLimits;
}

/** At most `concurrency` events processed at once, `perSecond` started per second (bursts of `burst`), across instances. */
export interface WorkLimits {
  concurrency?: number;
  perSecond?: number;
  burst?: number;
}

/** One key of the payload key ring: AES-256-GCM, 32 bytes. */
export interface PayloadKeyConfig {
  id: string;
  key: Buffer;
}

export interface AdminToken {
  name: string;
  role: AdminRole;
  /** The tenants this token may see and act on; undefined: all of them. */
  tenants?: ReadonlySet<string>;
  /** SHA-256 of the token: tokens are compared as digests, in constant time. */
  sha256: Buffer;
}

export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
}

/** The validated, typed configuration. Built once at boot by loadConfig(). */
export interface AppConfig {
  production: boolean;
  /** Unset: the embedded PostgreSQL under dataDir. */
  databaseUrl?: string;
  databasePoolSize: number;
  dataDir: string;
  port: number;
  endpointsFile: string;
  endpoints: ReadonlyMap<string, EndpointConfig>;
  /** The worker's limits per tenant (the endpoints file's `tenants`); an endpoint's own are on it. */
  tenantLimits: ReadonlyMap<string, WorkLimits>;
  adminTokens: AdminToken[];
  /** Dev mode only: the generated operator token, printed once at start. */
  generatedAdminToken?: string;
  /** Every destination named by a `DESTINATION_<NAME>_*` variable, plus erp and email (`ERP_*`, `EMAIL_*`). */
  destinations: ReadonlyMap<string, DestinationVariables>;
  roles: ReadonlySet<Role>;
  /** Ingestion group commit: rows per statement, wait for company, concurrent flushes. */
  ingestBatch: { maxBatch: number; maxWaitMs: number; maxInFlight: number };
  /**
   * What a stranger can hold before authentication: the accept queue (waiters past
   * `queueMax` or waiting longer than `queueWaitMs` get 503) and the bytes buffered
   * across all webhook requests in flight; and what one client (its address, read
   * through `trustedProxies` hops of X-Forwarded-For) may hold of each, so one
   * client filling its share leaves the others answered.
   */
  intake: {
    queueMax: number;
    queueWaitMs: number;
    bufferMaxBytes: number;
    bufferPerClientMaxBytes: number;
    /** Accepts in flight (queued or committing) per client. */
    queuePerClientMax: number;
    /** Accepts in flight (queued or committing) per endpoint. */
    queuePerEndpointMax: number;
    trustedProxies: number;
  };
  /** HTTP server bounds: the headers and the whole request must arrive in time; open connections are capped. */
  http: { headersTimeoutMs: number; bodyTimeoutMs: number; maxConnections: number };
  /**
   * coalesceMs: while wake-ups keep coming, claims start at most this often, so each takes several events.
   * bulkReplayPerSecond: a bulk replay's events fall due at this pace (0: all at once), so the same tenant's live events are not queued behind all of them.
   */
  worker: {
    pollMs: number;
    coalesceMs: number;
    leaseMs: number;
    maxAttempts: number;
    /** How long after its receipt an early event (WaitingError) waits without counting attempts. */
    waitMs: number;
    bulkReplayPerSecond: number;
  };
  retry: RetryPolicy;
  relay: { pollMs: number; timeoutMs: number; leaseMs: number; maxAttempts: number };
  metricsToken?: string;
  /** `/docs`, `/docs-json`: open to anyone (public) or to admin tokens only (admin, the default in production). */
  apiDocs: 'public' | 'admin';
  /**
   * The data lifecycle (RETENTION_*): days each kind of row is kept, 0 meaning for ever
   * where that is allowed; the job's batch size and batches per kind and run.
   */
  retention: {
    payloadDays: number;
    identityDays: number;
    /** Quarantined inbox events, dead and unresolved outbox entries: kept this long for an operator. */
    abandonedDays: number;
    /** Orders (and their transitions) not changed for this long. */
    orderDays: number;
    auditDays: number;
    reconciliationRunDays: number;
    /** Rows of the rejected-request log (RETENTION_REJECTION_DAYS). */
    rejectionDays: number;
    batchSize: number;
    maxBatches: number;
  };
  /**
   * The rejected-request log (REJECTION_LOG_*): per endpoint, at most `perMinute` rejections kept per
   * minute and instance (a token bucket; 0: no log), and at most `maxRowsPerEndpoint` rows kept (the
   * oldest dropped by the retention job).
   */
  rejectionLog: { perMinute: number; maxRowsPerEndpoint: number };
  /** Provider API calls: reads per second per key (shared by all instances), per-call deadline, plain http allowed. */
  providerApi: { readsPerSecond: number; timeoutMs: number; allowHttp: boolean };
  /** PAYLOAD_KEYS / PAYLOAD_KEYS_FILE, the first one current; undefined: payloads stored in clear. */
  payloadKeys?: PayloadKeyConfig[];
  logLevel: string;
  /** OpenTelemetry traces (OTEL_* variables), off by default. */
  tracing: TracingConfig;
}

/** Injection token for AppConfig (an interface has no runtime class). */
export const APP_CONFIG = Symbol('APP_CONFIG');

/**
 * How far this instance's clock may be off PostgreSQL's (and so off another instance's):
 * a quarter of the shortest lease. The start refuses more (ClockSkewCheck); whoever
 * keeps a lease's promise subtracts it, since another instance may see the lease end early.
 */
export function clockSkewAllowanceMs(config: Pick<AppConfig, 'worker' | 'relay'>): number {
  return Math.min(config.worker.leaseMs, config.relay.leaseMs) / 4;
}
