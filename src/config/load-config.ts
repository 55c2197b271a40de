import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { AdminRole, AdminToken, ApiKey, AppConfig, EndpointApi, EndpointConfig, PayloadKeyConfig, Role, WorkLimits } from './app-config';
import { ConfigError, pathForMessage } from './config.error';
import { parseDatabaseUrl } from './database-url';
import { loadDestinationVariables } from './destinations';
import { endpointsFileSchema } from './endpoints.schema';
import { loadTracingConfig } from './tracing-env';

export type Env = Record<string, string | undefined>;

/** Longest provider redelivery window (Stripe: manual resend from the CLI for 30 days). */
export const MIN_IDENTITY_RETENTION_DAYS = 30;

const ROLES: readonly Role[] = ['api', 'worker', 'relay', 'maintenance'];

function int(name: string, env: Env, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}: expected an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

/** Days to keep a kind of row: 0 (for ever, by the operator's choice) or at least `min`. */
function daysOrForever(name: string, env: Env, fallback: number, min: number): number {
  const days = int(name, env, fallback, 0, 36500);
  if (days !== 0 && days < min) throw new ConfigError(`${name}: 0 (keep for ever) or at least ${min} days, got ${days}`);
  return days;
}

/** The intake bounds; a client's and an endpoint's shares default to a fraction of the totals. */
function intakeLimits(env: Env): AppConfig['intake'] {
  const queueMax = int('INGEST_QUEUE_MAX', env, 4096, 1, 1_000_000);
  const bufferMaxBytes = int('INGEST_BUFFER_MAX_BYTES', env, 128 * 1024 * 1024, 1024, 16 * 1024 * 1024 * 1024);
  return {
    queueMax,
    queueWaitMs: int('INGEST_QUEUE_WAIT_MS', env, 8000, 10, 60_000),
    bufferMaxBytes,
    bufferPerClientMaxBytes: int('INGEST_BUFFER_PER_CLIENT_MAX_BYTES', env, Math.floor(bufferMaxBytes / 8), 1024, bufferMaxBytes),
    // Accepts in flight, queued or committing: at most a batch per flusher more than the queue holds.
    queuePerClientMax: int('INGEST_QUEUE_PER_CLIENT_MAX', env, Math.max(1, Math.floor(queueMax / 4)), 1, 1_000_000),
    queuePerEndpointMax: int('INGEST_QUEUE_PER_ENDPOINT_MAX', env, Math.max(1, Math.floor(queueMax / 2)), 1, 1_000_000),
    trustedProxies: int('INGEST_TRUSTED_PROXIES', env, 0, 0, 10),
  };
}

function bool(name: string, env: Env, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`${name}: expected true or false`);
}

/** Only what a migration run needs, so it does not depend on the endpoints file or tokens. */
export function loadDatabaseConfig(env: Env): { databaseUrl: string | undefined; dataDir: string } {
  if (env.NODE_ENV === 'production' && !env.DATABASE_URL) throw new ConfigError('DATABASE_URL: required when NODE_ENV=production');
  const databaseUrl = env.DATABASE_URL || undefined;
  // Several hosts (libpq syntax) are allowed: the parser checks what WHATWG URL cannot read.
  if (databaseUrl !== undefined) parseDatabaseUrl(databaseUrl);
  return { databaseUrl: databaseUrl?.replace(/\/+$/, ''), dataDir: resolve(env.DATA_DIR || '.data') };
}

function parseRoles(env: Env): Set<Role> {
  const raw = env.ROLES;
  if (raw === undefined || raw.trim() === '') return new Set(ROLES);
  const roles = raw.split(',').map((r) => r.trim());
  for (const role of roles) {
    if (!ROLES.includes(role as Role)) {
      throw new ConfigError(`ROLES: unknown role "${role}" (expected any of ${ROLES.join(', ')})`);
    }
  }
  return new Set(roles as Role[]);
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

const TENANT_ID = /^[A-Za-z0-9._-]{1,100}$/;

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/** A tenant no endpoint has is a typo that would lock its operators out (or in): refused at start. */
function checkTokenTenants(tokens: AdminToken[], endpoints: ReadonlyMap<string, EndpointConfig>): void {
  const known = new Set([...endpoints.values()].map((e) => e.tenantId));
  for (const [index, token] of tokens.entries()) {
    for (const tenant of token.tenants ?? []) {
      if (!known.has(tenant)) throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} names tenant "${tenant}", which no endpoint has`);
    }
  }
}

function parseAdminTokens(raw: string): AdminToken[] {
  const tokens = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry, index) => {
      const first = entry.indexOf(':');
      const second = entry.indexOf(':', first + 1);
      const name = entry.slice(0, first);
      // `role` or `role@tenant+tenant`: a token limited to those tenants.
      const [role, scope] = splitOnce(entry.slice(first + 1, second), '@');
      const token = entry.slice(second + 1);
      if (first <= 0 || second <= first || !name || !token) {
        throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} is not "name:role:token"`);
      }
      if (role !== 'viewer' && role !== 'operator') {
        // The value is not echoed: with the fields in the wrong order it is the token.
        throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} has no role viewer or operator in its second field ("name:role:token")`);
      }
      let tenants: Set<string> | undefined;
      if (scope !== undefined) {
        const list = scope.split('+');
        if (list.some((t) => t === ''))
          throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} has an empty tenant list or tenant ("role@tenant+tenant")`);
        const bad = list.find((t) => !TENANT_ID.test(t));
        if (bad !== undefined)
          throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} has a tenant that is not letters, digits, ".", "_" or "-"`);
        tenants = new Set(list);
      }
      if (token.startsWith('sha256:')) {
        const hex = token.slice('sha256:'.length);
        if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
          throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} has a sha256 token that is not 64 hex digits`);
        }
        return { name, role: role as AdminRole, tenants, sha256: Buffer.from(hex, 'hex') };
      }
      if (token.length < 16) {
        // Named by position, never by its first field: with the fields in the wrong order that is the token.
        throw new ConfigError(`ADMIN_TOKENS: entry ${index + 1} has a token shorter than 16 characters`);
      }
      return { name, role: role as AdminRole, tenants, sha256: sha256(token) };
    });
  const names = new Map<string, number>();
  for (const [index, t] of tokens.entries()) {
    const first = names.get(t.name);
    if (first !== undefined) throw new ConfigError(`ADMIN_TOKENS: entries ${first + 1} and ${index + 1} have the same name`);
    names.set(t.name, index);
  }
  return tokens;
}

/** What the endpoints file's `api` objects may use, from the environment. */
interface ApiLimits {
  production: boolean;
  allowHttp: boolean;
  identityDays: number;
}

/** The secret label reserved for events read from the provider's API (`verified_with = 'api'`). */
export const API_VERIFIED_WITH = 'api';

type ApiInput = NonNullable<z.infer<typeof endpointsFileSchema>['endpoints'][number]['api']>;

function loadApi(api: ApiInput, where: string, env: Env, limits: ApiLimits): EndpointApi {
  const value = env[api.env];
  // Not the variable's name: a key pasted into "env" by mistake would be printed.
  if (!value) throw new ConfigError(`${where}.api.env: the environment variable it names is not set`);
  let baseUrl: URL | undefined;
  if (api.baseUrl !== undefined) {
    try {
      baseUrl = new URL(api.baseUrl);
    } catch {
      throw new ConfigError(`${where}.api.baseUrl: not a valid URL`);
    }
    if (baseUrl.protocol !== 'https:' && baseUrl.protocol !== 'http:')
      throw new ConfigError(`${where}.api.baseUrl: expected a http or https URL`);
    if (baseUrl.username || baseUrl.password) throw new ConfigError(`${where}.api.baseUrl: no credentials in the URL`);
    if (limits.production && baseUrl.protocol !== 'https:' && !limits.allowHttp) {
      // The key travels with every call: over plain http anyone on the path could take it.
      throw new ConfigError(
        `${where}.api.baseUrl: must be https in production (PROVIDER_API_ALLOW_HTTP=true allows http, for a local proxy)`,
      );
    }
  }
  const reconcile = api.reconcile;
  // An event older than the identity retention may have lost its row: read again, it would be accepted twice.
  const maxLookbackHours = (limits.identityDays - 1) * 24;
  if (reconcile && reconcile.lookbackHours > maxLookbackHours) {
    throw new ConfigError(
      `${where}.api.reconcile.lookbackHours: at most ${maxLookbackHours} (RETENTION_IDENTITY_DAYS minus one day), or an event whose identity was purged would be accepted twice`,
    );
  }
  return {
    key: new ApiKey(value, createHash('sha256').update(value).digest('hex').slice(0, 12)),
    baseUrl,
    confirm: api.confirm ?? true,
    reconcile,
    owner: api.owner,
    repo: api.repo,
    org: api.org,
  };
}

function loadEndpoints(
  file: string,
  env: Env,
  production: boolean,
  limits: ApiLimits,
): { endpoints: Map<string, EndpointConfig>; tenantLimits: Map<string, WorkLimits> } {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : 'not valid JSON';
    throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: ${file}: ${why}`);
  }
  const parsed = endpointsFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: ${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const endpoints = new Map<string, EndpointConfig>();
  for (const [index, e] of parsed.data.endpoints.entries()) {
    if (endpoints.has(e.id)) {
      throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: ${file}: endpoints.${index}.id: duplicate endpoint id "${e.id}"`);
    }
    const labels = new Set<string>();
    const secrets = e.secrets.map((s, i) => {
      if (s.label === API_VERIFIED_WITH) {
        throw new ConfigError(
          `WEBHOOK_ENDPOINTS_FILE: ${file}: endpoints.${index}.secrets.${i}: the label "api" is reserved for events read from the provider's API`,
        );
      }
      // The label is stored as the evidence of which secret verified an event: it must name one secret.
      if (labels.has(s.label)) {
        throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: ${file}: endpoints.${index}.secrets.${i}: duplicate secret label "${s.label}"`);
      }
      labels.add(s.label);
      if (production && s.value !== undefined) {
        throw new ConfigError(
          `WEBHOOK_ENDPOINTS_FILE: ${file}: endpoints.${index}.secrets.${i}: an inline "value" is for development; in production name an environment variable ("env")`,
        );
      }
      const value = s.value ?? env[s.env!];
      if (!value) {
        throw new ConfigError(
          // Not the variable's name: a secret pasted into "env" by mistake would be printed.
          `WEBHOOK_ENDPOINTS_FILE: ${file}: endpoints.${index}.secrets.${i} ("${s.label}"): the environment variable it names is not set`,
        );
      }
      return { label: s.label, value, notAfter: s.notAfter ? new Date(s.notAfter) : undefined };
    });
    endpoints.set(e.id, {
      id: e.id,
      provider: e.provider,
      tenantId: e.tenantId,
      secrets,
      toleranceSeconds: e.toleranceSeconds,
      maxBodyBytes: e.maxBodyBytes,
      eventTypes: e.eventTypes ? new Set(e.eventTypes) : undefined,
      expect: e.expect,
      api: e.api ? loadApi(e.api, `WEBHOOK_ENDPOINTS_FILE: ${file}: endpoints.${index}`, env, limits) : undefined,
      settings: e.settings,
      omit: e.omit,
      limits: e.limits,
    });
  }
  const tenantLimits = new Map<string, WorkLimits>();
  const tenants = new Set([...endpoints.values()].map((e) => e.tenantId));
  for (const [index, t] of (parsed.data.tenants ?? []).entries()) {
    // A limit on a tenant no endpoint has is a typo that would leave the real one unlimited.
    if (!tenants.has(t.id)) throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: ${file}: tenants.${index}.id: no endpoint has tenant "${t.id}"`);
    if (tenantLimits.has(t.id)) throw new ConfigError(`WEBHOOK_ENDPOINTS_FILE: ${file}: tenants.${index}.id: duplicate tenant "${t.id}"`);
    tenantLimits.set(t.id, t.limits);
  }
  return { endpoints, tenantLimits };
}

const KEY_ID = /^[A-Za-z0-9._-]{1,32}$/;

/**
 * `<id>:<base64 of 32 bytes>,...`, the first one current. Messages name the entry,
 * never its key material.
 */
export function parsePayloadKeys(raw: string, source: string): PayloadKeyConfig[] {
  const entries = raw
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new ConfigError(`${source}: no key (expected "<id>:<base64 of 32 bytes>,...")`);
  const keys = entries.map((entry, index) => {
    const colon = entry.indexOf(':');
    const id = entry.slice(0, colon);
    const material = entry.slice(colon + 1);
    if (colon <= 0 || !KEY_ID.test(id)) {
      throw new ConfigError(`${source}: entry ${index + 1} does not start with a key id (1-32 letters, digits, ".", "_", "-") and ":"`);
    }
    const key = Buffer.from(material, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(material) || key.length !== 32) {
      throw new ConfigError(`${source}: key "${id}" is not the base64 of 32 bytes (openssl rand -base64 32)`);
    }
    return { id, key };
  });
  const ids = new Set<string>();
  for (const k of keys) {
    if (ids.has(k.id)) throw new ConfigError(`${source}: duplicate key id "${k.id}"`);
    ids.add(k.id);
  }
  return keys;
}

function loadPayloadKeys(env: Env): PayloadKeyConfig[] | undefined {
  if (env.PAYLOAD_KEYS && env.PAYLOAD_KEYS_FILE)
    throw new ConfigError('PAYLOAD_KEYS_FILE: set either PAYLOAD_KEYS or PAYLOAD_KEYS_FILE, not both');
  if (env.PAYLOAD_KEYS) return parsePayloadKeys(env.PAYLOAD_KEYS, 'PAYLOAD_KEYS');
  if (!env.PAYLOAD_KEYS_FILE) return undefined;
  const file = resolve(env.PAYLOAD_KEYS_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : 'not readable';
    throw new ConfigError(`PAYLOAD_KEYS_FILE: ${pathForMessage(env.PAYLOAD_KEYS_FILE)}: ${why}`);
  }
  return parsePayloadKeys(text, `PAYLOAD_KEYS_FILE: ${pathForMessage(env.PAYLOAD_KEYS_FILE)}`);
}

/** Node's defaults (60 s for the headers, 300 s for the request) would let a trickling stranger hold a connection for minutes. */
function httpLimits(env: Env): AppConfig['http'] {
  const headersTimeoutMs = int('HTTP_HEADERS_TIMEOUT_MS', env, 10_000, 100, 60_000);
  const bodyTimeoutMs = int('HTTP_BODY_TIMEOUT_MS', env, 30_000, 100, 300_000);
  if (bodyTimeoutMs < headersTimeoutMs) {
    // The body deadline counts from the request's start, headers included.
    throw new ConfigError(`HTTP_BODY_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs})`);
  }
  return { headersTimeoutMs, bodyTimeoutMs, maxConnections: int('HTTP_MAX_CONNECTIONS', env, 4096, 1, 1_000_000) };
}

function apiDocs(env: Env, production: boolean): AppConfig['apiDocs'] {
  const value = env.API_DOCS || (production ? 'admin' : 'public');
  if (value !== 'public' && value !== 'admin') throw new ConfigError(`API_DOCS: expected public or admin, got "${value}"`);
  return value;
}

const logLevelSchema = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/**
 * Validates the whole environment once. Throws ConfigError whose message is one
 * line naming the bad variable. The only reader of process.env is main.ts, which
 * passes it here.
 */
export function loadConfig(env: Env): AppConfig {
  const nodeEnv = env.NODE_ENV ?? 'development';
  if (!['development', 'production', 'test'].includes(nodeEnv)) {
    throw new ConfigError(`NODE_ENV: expected development, production or test, got "${nodeEnv}"`);
  }
  const production = nodeEnv === 'production';
  if (production) {
    // Destination URLs are required too: by the registry, for each destination that is registered.
    for (const name of ['DATABASE_URL', 'WEBHOOK_ENDPOINTS_FILE', 'ADMIN_TOKENS']) {
      if (!env[name]) throw new ConfigError(`${name}: required when NODE_ENV=production`);
    }
  }

  const endpointsFile = resolve(env.WEBHOOK_ENDPOINTS_FILE || 'config/endpoints.json');
  let adminTokens: AdminToken[];
  let generatedAdminToken: string | undefined;
  if (env.ADMIN_TOKENS) {
    adminTokens = parseAdminTokens(env.ADMIN_TOKENS);
  } else {
    generatedAdminToken = randomBytes(24).toString('base64url');
    adminTokens = [{ name: 'dev', role: 'operator', sha256: sha256(generatedAdminToken) }];
  }

  const identityDays = int('RETENTION_IDENTITY_DAYS', env, 30, MIN_IDENTITY_RETENTION_DAYS, 3650);
  const logLevel = logLevelSchema.safeParse(env.LOG_LEVEL ?? 'info');
  if (!logLevel.success) throw new ConfigError(`LOG_LEVEL: expected one of ${logLevelSchema.options.join(', ')}`);

  const retryBaseMs = int('RETRY_BASE_MS', env, 1000, 1);
  const retryMaxMs = int('RETRY_MAX_MS', env, 3600000, 1);
  if (retryMaxMs < retryBaseMs) throw new ConfigError(`RETRY_MAX_MS: must be at least RETRY_BASE_MS (${retryBaseMs})`);

  const workerLeaseMs = int('WORKER_LEASE_MS', env, 30000, 100);
  // A confirm read runs inside the claimed event's lease: at most a quarter of it.
  const providerApiTimeoutMs = int(
    'PROVIDER_API_TIMEOUT_MS',
    env,
    Math.min(10000, Math.floor(workerLeaseMs / 4)),
    10,
    Math.floor(workerLeaseMs / 4),
  );
  const allowHttp = bool('PROVIDER_API_ALLOW_HTTP', env, false);

  const relayTimeoutMs = int('RELAY_TIMEOUT_MS', env, 10000, 10);
  const relayLeaseMs = int('RELAY_LEASE_MS', env, 60000, 100);
  if ((relayLeaseMs * 3) / 4 <= 2 * relayTimeoutMs) {
    // A round must be able to query an outcome and resend within one lease, less the clock
    // skew another instance may have (up to a quarter of the lease).
    throw new ConfigError(
      `RELAY_LEASE_MS: must be more than twice RELAY_TIMEOUT_MS (${relayTimeoutMs}) plus a quarter of itself (the clock skew allowance)`,
    );
  }

  const { endpoints, tenantLimits } = loadEndpoints(endpointsFile, env, production, { production, allowHttp, identityDays });
  checkTokenTenants(adminTokens, endpoints);

  return {
    production,
    ...loadDatabaseConfig(env),
    databasePoolSize: int('DATABASE_POOL_SIZE', env, 20, 2, 500),
    port: int('PORT', env, 3000, 0, 65535),
    endpointsFile,
    endpoints,
    tenantLimits,
    adminTokens,
    generatedAdminToken,
    destinations: loadDestinationVariables(env, relayTimeoutMs),
    roles: parseRoles(env),
    intake: intakeLimits(env),
    http: httpLimits(env),
    ingestBatch: {
      maxBatch: int('INGEST_BATCH_MAX', env, 128, 1, 1000),
      maxWaitMs: int('INGEST_BATCH_WAIT_MS', env, 0, 0, 100),
      maxInFlight: int('INGEST_FLUSHERS', env, 2, 1, 64),
    },
    worker: {
      pollMs: int('WORKER_POLL_MS', env, 1000, 10),
      coalesceMs: int('WORKER_COALESCE_MS', env, 10, 0, 1000),
      leaseMs: workerLeaseMs,
      maxAttempts: int('WORKER_MAX_ATTEMPTS', env, 10, 1, 1000),
      waitMs: int('WORKER_WAIT_HOURS', env, 72, 0, 24 * 90) * 3600_000,
      bulkReplayPerSecond: int('BULK_REPLAY_PER_SECOND', env, 1000, 0, 1_000_000),
    },
    retry: {
      baseMs: retryBaseMs,
      maxMs: retryMaxMs,
    },
    relay: {
      pollMs: int('RELAY_POLL_MS', env, 1000, 10),
      timeoutMs: relayTimeoutMs,
      leaseMs: relayLeaseMs,
      maxAttempts: int('RELAY_MAX_ATTEMPTS', env, 12, 1, 1000),
    },
    metricsToken: env.METRICS_TOKEN || undefined,
    apiDocs: apiDocs(env, production),
    retention: {
      payloadDays: int('RETENTION_PAYLOAD_DAYS', env, 7, 0, identityDays),
      identityDays,
      abandonedDays: daysOrForever('RETENTION_ABANDONED_DAYS', env, Math.max(90, identityDays), identityDays),
      orderDays: daysOrForever('RETENTION_ORDER_DAYS', env, Math.max(400, identityDays), identityDays),
      auditDays: daysOrForever('RETENTION_AUDIT_DAYS', env, 400, MIN_IDENTITY_RETENTION_DAYS),
      reconciliationRunDays: daysOrForever('RETENTION_RECONCILIATION_RUN_DAYS', env, 30, 1),
      rejectionDays: int('RETENTION_REJECTION_DAYS', env, 7, 1, 3650),
      batchSize: int('RETENTION_BATCH_SIZE', env, 1000, 10, 50_000),
      maxBatches: int('RETENTION_MAX_BATCHES', env, 100, 1, 1_000_000),
    },
    rejectionLog: {
      perMinute: int('REJECTION_LOG_PER_MINUTE', env, 60, 0, 60_000),
      maxRowsPerEndpoint: int('REJECTION_LOG_MAX_ROWS', env, 10_000, 100, 1_000_000),
    },
    providerApi: {
      readsPerSecond: int('PROVIDER_API_READS_PER_SECOND', env, 25, 1, 10000),
      timeoutMs: providerApiTimeoutMs,
      allowHttp,
    },
    logLevel: logLevel.data,
    payloadKeys: loadPayloadKeys(env),
    tracing: loadTracingConfig(env),
  };
}
