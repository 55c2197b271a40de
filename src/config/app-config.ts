export type Role = 'api' | 'worker' | 'relay' | 'maintenance';
export type AdminRole = 'viewer' | 'operator';

export interface EndpointSecret {
  label: string;
  value: string;
  /** End of the overlap window of a rotated-out secret. */
  notAfter?: Date;
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
}

export interface AdminToken {
  name: string;
  role: AdminRole;
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
  adminTokens: AdminToken[];
  /** Dev mode only: the generated operator token, printed once at start. */
  generatedAdminToken?: string;
  erpUrl?: string;
  emailUrl?: string;
  roles: ReadonlySet<Role>;
  /** Ingestion group commit: rows per statement, wait for company, concurrent flushes. */
  ingestBatch: { maxBatch: number; maxWaitMs: number; maxInFlight: number };
  worker: { pollMs: number; leaseMs: number; maxAttempts: number };
  retry: RetryPolicy;
  relay: { pollMs: number; timeoutMs: number; leaseMs: number; maxAttempts: number };
  metricsToken?: string;
  retention: { payloadDays: number; identityDays: number };
  logLevel: string;
}

/** Injection token for AppConfig (an interface has no runtime class). */
export const APP_CONFIG = Symbol('APP_CONFIG');
