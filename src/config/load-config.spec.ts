import { inspect } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './config.error';
import { settingsFor } from './destinations';
import { Env, loadConfig } from './load-config';

function endpointsFile(endpoints: unknown[], tenants?: unknown[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'wi-config-')), 'endpoints.json');
  writeFileSync(file, JSON.stringify({ endpoints, ...(tenants && { tenants }) }));
  return file;
}

const stripe = (overrides: Record<string, unknown> = {}) => ({
  id: 'stripe-acme',
  provider: 'stripe',
  tenantId: 'acme',
  secrets: [{ label: 'k1', env: 'STRIPE_SECRET_ACME' }],
  ...overrides,
});

function load(env: Env, endpoints: unknown[] = [stripe()], tenants?: unknown[]) {
  return loadConfig({ WEBHOOK_ENDPOINTS_FILE: endpointsFile(endpoints, tenants), STRIPE_SECRET_ACME: 'whsec_x', ...env });
}

/** Everything production requires besides the endpoints file. */
const PRODUCTION: Env = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://u@db/x',
  ADMIN_TOKENS: 'ops:operator:0123456789abcdef',
  ERP_URL: 'http://erp',
  EMAIL_URL: 'http://email',
};

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults in development', () => {
    const config = load({});
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect([...config.roles]).toEqual(['api', 'worker', 'relay', 'maintenance']);
    expect(config.worker).toEqual({
      pollMs: 1000,
      coalesceMs: 10,
      leaseMs: 30000,
      maxAttempts: 10,
      waitMs: 72 * 3600_000,
      bulkReplayPerSecond: 1000,
    });
    expect(config.retry).toEqual({ baseMs: 1000, maxMs: 3600000 });
    expect(config.relay).toEqual({ pollMs: 1000, timeoutMs: 10000, leaseMs: 60000, maxAttempts: 12 });
    expect([...config.destinations.keys()]).toEqual(['erp', 'email']);
    expect(settingsFor(config.destinations.get('erp'), { concurrency: 16 }, config.relay.timeoutMs)).toEqual({
      url: undefined,
      timeoutMs: 10000,
      concurrency: 16,
      circuit: { failures: 5, cooldownMs: 30000 },
      rateLimit: undefined,
      headers: {},
      signingKey: undefined,
      tls: undefined,
    });
    expect(config.generatedAdminToken).toHaveLength(32);
    const endpoint = config.endpoints.get('stripe-acme')!;
    expect(endpoint.toleranceSeconds).toBe(300);
    expect(endpoint.maxBodyBytes).toBe(1048576);
    expect(endpoint.secrets).toEqual([{ label: 'k1', value: 'whsec_x', notAfter: undefined }]);
  });

  it.each([
    [{ PORT: 'abc' }, /^PORT: /],
    [{ WORKER_MAX_ATTEMPTS: '0' }, /^WORKER_MAX_ATTEMPTS: /],
    [{ RELAY_TIMEOUT_MS: '1.5' }, /^RELAY_TIMEOUT_MS: /],
    [{ RELAY_TIMEOUT_MS: '30000' }, /^RELAY_LEASE_MS: must be more than twice RELAY_TIMEOUT_MS/],
    [{ RELAY_TIMEOUT_MS: '25000' }, /^RELAY_LEASE_MS: must be more than twice RELAY_TIMEOUT_MS \(25000\) plus a quarter/],
    [{ ROLES: 'api,cron' }, /^ROLES: unknown role "cron"/],
    [{ ERP_URL: 'not a url' }, /^ERP_URL: /],
    [{ ADMIN_TOKENS: 'alice:admin:0123456789abcdef' }, /^ADMIN_TOKENS: entry 1 has no role/],
    [{ ERP_URL: 'postgres://u:pw@db/x' }, /^ERP_URL: expected a http or https URL/],
    [{ DATABASE_URL: 'http://db/x' }, /^DATABASE_URL: expected a postgres or postgresql URL/],
    [{ RETRY_BASE_MS: '5000', RETRY_MAX_MS: '10' }, /^RETRY_MAX_MS: must be at least RETRY_BASE_MS/],
    [{ ADMIN_TOKENS: 'alice:viewer:short' }, /^ADMIN_TOKENS: .*shorter than 16/],
    [{ ADMIN_TOKENS: 'alice:viewer:sha256:xyz' }, /^ADMIN_TOKENS: .*64 hex/],
    [{ RETENTION_IDENTITY_DAYS: '7' }, /^RETENTION_IDENTITY_DAYS: /],
    [{ NODE_ENV: 'staging' }, /^NODE_ENV: /],
    [{ ERP_CONCURRENCY: '0' }, /^ERP_CONCURRENCY: /],
    [{ EMAIL_CIRCUIT_FAILURES: 'many' }, /^EMAIL_CIRCUIT_FAILURES: /],
    [{ ERP_CIRCUIT_COOLDOWN_MS: '5' }, /^ERP_CIRCUIT_COOLDOWN_MS: /],
    [{ ERP_RATE_LIMIT: '-1' }, /^ERP_RATE_LIMIT: /],
    [{ ERP_RATE_BURST: '10' }, /^ERP_RATE_BURST: needs ERP_RATE_LIMIT/],
  ])('refuses %j with one line naming the variable', (env, pattern) => {
    const message = errorOf(() => load(env));
    expect(message).toMatch(pattern);
    expect(message).not.toContain('\n');
  });

  it('DATABASE_URL may list several hosts in libpq syntax (failover to the writable one)', () => {
    const url = 'postgres://u@db1:5432,db2:5433/x?target_session_attrs=read-write';
    expect(load({ DATABASE_URL: url }).databaseUrl).toBe(url);
    expect(errorOf(() => load({ DATABASE_URL: 'postgres://u@db1,db2/x?target_session_attrs=standby' }))).toMatch(
      /^DATABASE_URL: target_session_attrs "standby"/,
    );
  });

  it('keeps each destination settings in one object (URL, concurrency, circuit, shared rate limit)', () => {
    const config = load({
      ERP_URL: 'https://erp.internal/api/',
      ERP_CONCURRENCY: '4',
      ERP_CIRCUIT_FAILURES: '3',
      ERP_CIRCUIT_COOLDOWN_MS: '10000',
      ERP_RATE_LIMIT: '50',
      EMAIL_RATE_LIMIT: '5',
      EMAIL_RATE_BURST: '20',
    });
    expect(settingsFor(config.destinations.get('erp'), { concurrency: 16 }, config.relay.timeoutMs)).toMatchObject({
      url: 'https://erp.internal/api',
      concurrency: 4,
      circuit: { failures: 3, cooldownMs: 10000 },
      rateLimit: { perSecond: 50, burst: 50 },
    });
    expect(settingsFor(config.destinations.get('email'), {}, config.relay.timeoutMs).rateLimit).toEqual({ perSecond: 5, burst: 20 });
  });

  it('accepts sha256-hashed admin tokens and both roles', () => {
    const config = load({ ADMIN_TOKENS: `ops:operator:sha256:${'ab'.repeat(32)},bob:viewer:0123456789abcdef` });
    expect(config.adminTokens.map((t) => [t.name, t.role])).toEqual([
      ['ops', 'operator'],
      ['bob', 'viewer'],
    ]);
    expect(config.generatedAdminToken).toBeUndefined();
  });

  it.each([
    ['a tolerance of 0', [stripe({ toleranceSeconds: 0 })], /toleranceSeconds: must be positive/],
    [
      'a missing secret variable',
      [stripe({ secrets: [{ label: 'k', env: 'UNSET_VAR' }] })],
      /secrets\.0 \("k"\): the environment variable it names is not set/,
    ],
    ['a tolerance over an hour', [stripe({ toleranceSeconds: 3601 })], /toleranceSeconds: at most 3600/],
    [
      'a secret pasted as "env"',
      [stripe({ secrets: [{ label: 'k', env: 'whsec_abc/def+ghi=' }] })],
      /secrets\.0\.env: the name of an environment variable/,
    ],
    ['duplicate endpoint ids', [stripe(), stripe()], /duplicate endpoint id "stripe-acme"/],
    ['a secret with both env and value', [stripe({ secrets: [{ label: 'k', env: 'A', value: 'b' }] })], /exactly one/],
    ['an unknown field', [stripe({ tolerance: 10 })], /endpoints\.0/],
    [
      'two secrets with one label (the label is the evidence of which secret verified)',
      [
        stripe({
          secrets: [
            { label: 'k', env: 'STRIPE_SECRET_ACME' },
            { label: 'k', value: 'whsec_other' },
          ],
        }),
      ],
      /endpoints\.0\.secrets\.1: duplicate secret label "k"/,
    ],
  ])('refuses an endpoints file with %s', (_name, endpoints, pattern) => {
    expect(errorOf(() => load({}, endpoints))).toMatch(pattern);
  });

  it('reads any destination from DESTINATION_<NAME>_*, ERP_* and EMAIL_* as aliases of the built-in ones', () => {
    const config = load({
      ERP_URL: 'http://erp/',
      DESTINATION_EMAIL_URL: 'https://mail.example/send',
      DESTINATION_CRM_EU_URL: 'https://crm.example',
      DESTINATION_CRM_EU_TIMEOUT_MS: '2000',
      DESTINATION_CRM_EU_CONCURRENCY: '3',
      DESTINATION_CRM_EU_BEARER_ENV: 'CRM_TOKEN',
      DESTINATION_CRM_EU_HEADER_X_API_KEY_ENV: 'CRM_KEY',
      CRM_TOKEN: 'tok-123',
      CRM_KEY: 'key-456',
    });
    expect(config.destinations.get('erp')?.url).toBe('http://erp');
    expect(config.destinations.get('email')?.url).toBe('https://mail.example/send');
    expect(config.destinations.get('crm_eu')).toMatchObject({
      url: 'https://crm.example',
      timeoutMs: 2000,
      concurrency: 3,
      headers: { authorization: 'Bearer tok-123', 'x-api-key': 'key-456' },
    });
  });

  it.each([
    [{ DESTINATION_CRM_URLL: 'http://x' }, /^DESTINATION_CRM_URLL: not a destination setting/],
    [{ DESTINATION_CRM_URL: 'ftp://x' }, /^DESTINATION_CRM_URL: expected a http or https URL/],
    [{ DESTINATION_CRM_URL: 'https://user:pw@crm' }, /^DESTINATION_CRM_URL: no credentials in the URL/],
    [{ ERP_URL: 'http://a', DESTINATION_ERP_URL: 'http://b' }, /^DESTINATION_ERP_URL: also set as ERP_URL/],
    [{ DESTINATION_CRM_BEARER_ENV: 'UNSET_TOKEN' }, /^DESTINATION_CRM_BEARER_ENV: the variable it names \(UNSET_TOKEN\) is not set/],
    [{ DESTINATION_CRM_TIMEOUT_MS: '20000' }, /^DESTINATION_CRM_TIMEOUT_MS: expected an integer between 10 and 10000/],
    [{ DESTINATION_CRM_HEADER_IDEMPOTENCY_KEY_ENV: 'K', K: 'v' }, /idempotency-key is set by the relay itself/],
    [{ DESTINATION_CRM_TLS_CERT_FILE: __filename }, /needs both DESTINATION_CRM_TLS_CERT_FILE and DESTINATION_CRM_TLS_KEY_FILE/],
    [
      { DESTINATION_CRM_SIGNING_SECRET_ENV: 'S', S: 'not base64!' },
      /^DESTINATION_CRM_SIGNING_SECRET_ENV: the secret it names is not a Standard Webhooks secret/,
    ],
  ])('refuses destination setting %j with one line naming it', (env, pattern) => {
    expect(errorOf(() => load(env as Env))).toMatch(pattern);
  });

  it('never prints a destination credential', () => {
    const secret = 'Bearer-looking-secret-value-123';
    expect(errorOf(() => load({ DESTINATION_CRM_BEARER_ENV: secret }))).not.toContain(secret);
    expect(errorOf(() => load({ DESTINATION_CRM_SIGNING_SECRET_ENV: 'S', S: secret }))).not.toContain(secret);
  });

  it('reads tenant scopes of admin tokens (name:role@tenant+tenant:token) and refuses a bad or unknown one', () => {
    const tokens = load({ ADMIN_TOKENS: 'acme:operator@acme:0123456789abcdef,all:viewer:fedcba9876543210' }).adminTokens;
    expect(tokens.map((t) => [t.name, t.role, t.tenants && [...t.tenants]])).toEqual([
      ['acme', 'operator', ['acme']],
      ['all', 'viewer', undefined],
    ]);
    expect(errorOf(() => load({ ADMIN_TOKENS: 'a:operator@:0123456789abcdef' }))).toMatch(
      /^ADMIN_TOKENS: entry 1 has an empty tenant list/,
    );
    expect(errorOf(() => load({ ADMIN_TOKENS: 'a:operator@acme+:0123456789abcdef' }))).toMatch(
      /^ADMIN_TOKENS: entry 1 has an empty tenant list/,
    );
    expect(errorOf(() => load({ ADMIN_TOKENS: 'a:viewer@globex:0123456789abcdef' }))).toMatch(
      /^ADMIN_TOKENS: entry 1 names tenant "globex", which no endpoint has/,
    );
  });

  it('refuses a missing endpoints file', () => {
    expect(errorOf(() => loadConfig({ WEBHOOK_ENDPOINTS_FILE: '/nonexistent/endpoints.json' }))).toMatch(
      /^WEBHOOK_ENDPOINTS_FILE: .*file not found/,
    );
  });

  it('refuses defaults in production', () => {
    expect(load(PRODUCTION).production).toBe(true);
    // Destination URLs are required by the destination registry, per registered destination (test/outbox/generic-destination.e2e-spec.ts).
    for (const name of ['DATABASE_URL', 'ADMIN_TOKENS']) {
      expect(errorOf(() => load({ ...PRODUCTION, [name]: undefined }))).toBe(`${name}: required when NODE_ENV=production`);
    }
    expect(errorOf(() => loadConfig({ ...PRODUCTION, STRIPE_SECRET_ACME: 'x' }))).toMatch(/^WEBHOOK_ENDPOINTS_FILE: required/);
  });

  it('never prints a secret in a config error', () => {
    const token = 'supersecrettoken12345';
    expect(errorOf(() => load({ ADMIN_TOKENS: `alice:${token}:viewer` }))).not.toContain(token);
    const pasted = 'whsec_REALSECRETVALUE';
    expect(errorOf(() => load({}, [stripe({ secrets: [{ label: 'k', env: pasted }] })]))).not.toContain(pasted);
  });

  it('puts the API docs behind the admin token in production unless API_DOCS=public', () => {
    expect(load(PRODUCTION).apiDocs).toBe('admin');
    expect(load({ ...PRODUCTION, API_DOCS: 'public' }).apiDocs).toBe('public');
    expect(load({}).apiDocs).toBe('public');
    expect(load({ API_DOCS: 'admin' }).apiDocs).toBe('admin');
    expect(errorOf(() => load({ API_DOCS: 'open' }))).toBe('API_DOCS: expected public or admin, got "open"');
  });

  it('refuses inline secret values in production: the demo file cannot go live', () => {
    expect(errorOf(() => load(PRODUCTION, [stripe({ secrets: [{ label: 'k', value: 'whsec_demo' }] })]))).toMatch(
      /secrets\.0: an inline "value" is for development/,
    );
    expect(load({ NODE_ENV: 'development' }, [stripe({ secrets: [{ label: 'k', value: 'whsec_demo' }] })]).endpoints.size).toBe(1);
  });

  describe("an endpoint's api object", () => {
    const KEY = 'sk_test_0123456789abcdefSECRET';
    const withApi = (api: Record<string, unknown>) => [stripe({ api: { env: 'STRIPE_API_KEY_ACME', ...api } })];

    it('reads the key from the variable it names and applies the defaults', () => {
      const config = load({ STRIPE_API_KEY_ACME: KEY }, withApi({ reconcile: {} }));
      const api = config.endpoints.get('stripe-acme')!.api!;
      expect(api.key.reveal()).toBe(KEY);
      expect(api.confirm).toBe(true);
      expect(api.baseUrl).toBeUndefined();
      expect(api.reconcile).toEqual({ enabled: true, intervalSeconds: 300, lookbackHours: 72, onlyFailedDeliveries: false });
      expect(config.providerApi).toEqual({ readsPerSecond: 25, timeoutMs: 7500, allowHttp: false });
    });

    it('never prints the key: JSON, string, inspect and the whole config show a label', () => {
      const config = load({ STRIPE_API_KEY_ACME: KEY }, withApi({}));
      const key = config.endpoints.get('stripe-acme')!.api!.key;
      expect(key.id).toMatch(/^[0-9a-f]{12}$/);
      for (const text of [JSON.stringify([...config.endpoints.values()]), String(key), `${key}`, inspect(config, { depth: 10 })]) {
        expect(text).not.toContain(KEY);
      }
    });

    it.each([
      ['an unset key variable', {}, {}, /endpoints\.0\.api\.env: the environment variable it names is not set/],
      ['a key pasted as "env"', { env: 'sk_live_abc/def' }, {}, /endpoints\.0\.api\.env: the name of an environment variable/],
      ['a base URL that is not a URL', { baseUrl: 'not a url' }, { STRIPE_API_KEY_ACME: KEY }, /api\.baseUrl: not a valid URL/],
      ['a base URL with credentials', { baseUrl: 'https://u:p@proxy' }, { STRIPE_API_KEY_ACME: KEY }, /api\.baseUrl: no credentials/],
      [
        'a lookback past the identity retention minus a day',
        { reconcile: { lookbackHours: 29 * 24 + 1 } },
        { STRIPE_API_KEY_ACME: KEY },
        /api\.reconcile\.lookbackHours: at most 696 \(RETENTION_IDENTITY_DAYS minus one day\)/,
      ],
      ['an interval under 10 s', { reconcile: { intervalSeconds: 1 } }, { STRIPE_API_KEY_ACME: KEY }, /api\.reconcile\.intervalSeconds/],
      ['an unknown field', { key: 'sk_x' }, { STRIPE_API_KEY_ACME: KEY }, /endpoints\.0\.api/],
    ])('refuses %s, in one line without the key', (_name, api, env, pattern) => {
      const message = errorOf(() => load(env, withApi(api)));
      expect(message).toMatch(pattern);
      expect(message).not.toContain('\n');
      expect(message).not.toContain(KEY);
      expect(message).not.toContain('sk_live_abc');
    });

    it('lets a longer identity retention allow a longer lookback', () => {
      const config = load({ STRIPE_API_KEY_ACME: KEY, RETENTION_IDENTITY_DAYS: '60' }, withApi({ reconcile: { lookbackHours: 59 * 24 } }));
      expect(config.endpoints.get('stripe-acme')!.api!.reconcile!.lookbackHours).toBe(1416);
    });

    it('wants https in production unless PROVIDER_API_ALLOW_HTTP=true; http is fine in development', () => {
      const env = { ...PRODUCTION, STRIPE_API_KEY_ACME: KEY };
      const http = withApi({ baseUrl: 'http://stripe-proxy:12111' }).map((e) => ({
        ...e,
        secrets: [{ label: 'k1', env: 'STRIPE_SECRET_ACME' }],
      }));
      expect(errorOf(() => load(env, http))).toMatch(/api\.baseUrl: must be https in production \(PROVIDER_API_ALLOW_HTTP=true/);
      expect(load({ ...env, PROVIDER_API_ALLOW_HTTP: 'true' }, http).endpoints.get('stripe-acme')!.api!.baseUrl!.port).toBe('12111');
      expect(load(env, withApi({ baseUrl: 'https://stripe-proxy' })).endpoints.get('stripe-acme')!.api!.baseUrl!.protocol).toBe('https:');
      expect(load({ STRIPE_API_KEY_ACME: KEY }, http).endpoints.get('stripe-acme')!.api!.baseUrl!.protocol).toBe('http:');
    });

    it('reserves the secret label "api" for events read from the API', () => {
      expect(errorOf(() => load({}, [stripe({ secrets: [{ label: 'api', env: 'STRIPE_SECRET_ACME' }] })]))).toMatch(
        /secrets\.0: the label "api" is reserved/,
      );
    });

    it('keeps a confirm read inside a quarter of the worker lease', () => {
      expect(load({ WORKER_LEASE_MS: '1000' }).providerApi.timeoutMs).toBe(250);
      expect(errorOf(() => load({ WORKER_LEASE_MS: '1000', PROVIDER_API_TIMEOUT_MS: '500' }))).toMatch(
        /^PROVIDER_API_TIMEOUT_MS: expected an integer between 10 and 250/,
      );
      expect(errorOf(() => load({ PROVIDER_API_ALLOW_HTTP: 'yes' }))).toMatch(/^PROVIDER_API_ALLOW_HTTP: expected true or false/);
    });
  });
});

describe('payload key ring (PAYLOAD_KEYS, PAYLOAD_KEYS_FILE)', () => {
  const k1 = Buffer.alloc(32, 1).toString('base64');
  const k2 = Buffer.alloc(32, 2).toString('base64');

  it('reads the ring in order, the first current; from the variable or a file; none by default', () => {
    expect(load({}).payloadKeys).toBeUndefined();
    expect(load({ PAYLOAD_KEYS: `k2:${k2}, k1:${k1}` }).payloadKeys).toEqual([
      { id: 'k2', key: Buffer.alloc(32, 2) },
      { id: 'k1', key: Buffer.alloc(32, 1) },
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'wi-keys-')), 'keys');
    writeFileSync(file, `k2:${k2}\nk1:${k1}\n`);
    expect(load({ PAYLOAD_KEYS_FILE: file }).payloadKeys?.map((k) => k.id)).toEqual(['k2', 'k1']);
  });

  it.each([
    [
      { PAYLOAD_KEYS: `k1:${Buffer.alloc(16).toString('base64')}` },
      'PAYLOAD_KEYS: key "k1" is not the base64 of 32 bytes (openssl rand -base64 32)',
    ],
    [{ PAYLOAD_KEYS: `k1:${k1.slice(0, -1)}!` }, 'PAYLOAD_KEYS: key "k1" is not the base64 of 32 bytes (openssl rand -base64 32)'],
    [{ PAYLOAD_KEYS: k1 }, 'PAYLOAD_KEYS: entry 1 does not start with a key id (1-32 letters, digits, ".", "_", "-") and ":"'],
    [{ PAYLOAD_KEYS: `k1:${k1},k1:${k2}` }, 'PAYLOAD_KEYS: duplicate key id "k1"'],
    [{ PAYLOAD_KEYS: ' , ' }, 'PAYLOAD_KEYS: no key (expected "<id>:<base64 of 32 bytes>,...")'],
    [{ PAYLOAD_KEYS: `k1:${k1}`, PAYLOAD_KEYS_FILE: '/x' }, 'PAYLOAD_KEYS_FILE: set either PAYLOAD_KEYS or PAYLOAD_KEYS_FILE, not both'],
    [{ PAYLOAD_KEYS_FILE: '/nonexistent/keys' }, 'PAYLOAD_KEYS_FILE: /nonexistent/keys: file not found'],
  ])('%j is refused in one line that never shows key material', (env, message) => {
    const error = errorOf(() => load(env));
    expect(error).toBe(message);
    expect(error).not.toContain(k1.slice(0, 20));
  });

  it('reads worker limits of endpoints and tenants, and refuses a limit that says nothing or names no tenant', () => {
    const config = load({}, [stripe({ limits: { perSecond: 20 } })], [{ id: 'acme', limits: { concurrency: 4 } }]);
    expect(config.endpoints.get('stripe-acme')!.limits).toEqual({ perSecond: 20 });
    expect(config.tenantLimits).toEqual(new Map([['acme', { concurrency: 4 }]]));
    expect(load({}).tenantLimits.size).toBe(0);
    expect(errorOf(() => load({}, [stripe({ limits: {} })]))).toMatch(
      /endpoints\.0\.limits: a limit needs "concurrency", "perSecond" or both/,
    );
    expect(errorOf(() => load({}, [stripe({ limits: { concurrency: 2, burst: 5 } })]))).toMatch(/"burst" is the bucket of "perSecond"/);
    expect(errorOf(() => load({}, [stripe()], [{ id: 'acme', limits: { concurrency: 0 } }]))).toMatch(/tenants\.0\.limits\.concurrency/);
    expect(errorOf(() => load({}, [stripe()], [{ id: 'acmee', limits: { concurrency: 2 } }]))).toMatch(
      /tenants\.0\.id: no endpoint has tenant "acmee"/,
    );
    const twice = [
      { id: 'acme', limits: { concurrency: 2 } },
      { id: 'acme', limits: { perSecond: 2 } },
    ];
    expect(errorOf(() => load({}, [stripe()], twice))).toMatch(/tenants\.1\.id: duplicate tenant "acme"/);
  });

  it('validates omit paths', () => {
    expect(load({}, [stripe({ omit: ['data.object.shipping'] })]).endpoints.get('stripe-acme')!.omit).toEqual(['data.object.shipping']);
    expect(errorOf(() => load({}, [stripe({ omit: ['data object'] })]))).toMatch(
      /endpoints\.0\.omit\.0: a JSON path of dot-separated keys/,
    );
  });

  it('gives each intake client a share of the totals: an eighth of the buffer and a quarter of the queue, never more than the buffer', () => {
    expect(load({}).intake).toMatchObject({ bufferPerClientMaxBytes: 16 * 1024 * 1024, queuePerClientMax: 1024, trustedProxies: 0 });
    expect(load({ INGEST_BUFFER_MAX_BYTES: '80000', INGEST_QUEUE_MAX: '2' }).intake).toMatchObject({
      bufferPerClientMaxBytes: 10000,
      queuePerClientMax: 1,
    });
    expect(load({ INGEST_BUFFER_PER_CLIENT_MAX_BYTES: '5000', INGEST_TRUSTED_PROXIES: '1' }).intake).toMatchObject({
      bufferPerClientMaxBytes: 5000,
      trustedProxies: 1,
    });
    expect(errorOf(() => load({ INGEST_BUFFER_MAX_BYTES: '4096', INGEST_BUFFER_PER_CLIENT_MAX_BYTES: '8192' }))).toMatch(
      /^INGEST_BUFFER_PER_CLIENT_MAX_BYTES: expected an integer between 1024 and 4096/,
    );
  });
});
