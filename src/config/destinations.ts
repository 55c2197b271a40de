import { readFileSync } from 'node:fs';
import { ConfigError, pathForMessage } from './config.error';

type Env = Record<string, string | undefined>;

/**
 * One destination's settings, read from `DESTINATION_<NAME>_*` variables (for
 * `erp` and `email` also `ERP_*` / `EMAIL_*`, as before). Unset fields take the
 * destination class's defaults (see `settingsFor`). Credentials are values
 * read from the variables named here: never logged, traced or shown.
 */
export interface DestinationVariables {
  url?: string;
  timeoutMs?: number;
  concurrency?: number;
  circuit: { failures?: number; cooldownMs?: number };
  rateLimit?: { perSecond: number; burst?: number };
  headers: Record<string, string>;
  /** Standard Webhooks signing key of outbound requests (the destination verifies us). */
  signingKey?: Buffer;
  /** Client certificate for mTLS, and a CA for the destination's own certificate. */
  tls?: { cert?: Buffer; key?: Buffer; ca?: Buffer };
}

/** The settings a destination runs with: configuration, else the class's defaults, else these. */
export interface DestinationSettings {
  url?: string;
  /** Per request; at most RELAY_TIMEOUT_MS. */
  timeoutMs: number;
  /** Requests in flight per relay instance. */
  concurrency: number;
  /** After `failures` consecutive "down" answers (connect errors, 5xx, timeouts), no requests for `cooldownMs`, then one probe. */
  circuit: { failures: number; cooldownMs: number };
  /** Requests per second across every relay instance; undefined: unlimited. */
  rateLimit?: { perSecond: number; burst: number };
  headers: Readonly<Record<string, string>>;
  signingKey?: Buffer;
  tls?: { cert?: Buffer; key?: Buffer; ca?: Buffer };
}

export interface DestinationDefaults {
  concurrency?: number;
}

/** The built-in destinations keep their historical variables as aliases. */
const LEGACY_PREFIX: Record<string, string> = { erp: 'ERP', email: 'EMAIL' };

const SETTINGS = [
  'URL',
  'TIMEOUT_MS',
  'CONCURRENCY',
  'CIRCUIT_FAILURES',
  'CIRCUIT_COOLDOWN_MS',
  'RATE_LIMIT',
  'RATE_BURST',
  'BEARER_ENV',
  'SIGNING_SECRET_ENV',
  'TLS_CERT_FILE',
  'TLS_KEY_FILE',
  'TLS_CA_FILE',
] as const;
const HEADER = /^HEADER_([A-Z0-9_]+)_ENV$/;
const NAME = /^[A-Z0-9]+(?:_[A-Z0-9]+)*$/;

/** `CRM_URL` -> `CRM`, `CRM_EU_HEADER_X_API_KEY_ENV` -> `CRM_EU`; undefined when no setting ends it. */
function destinationName(rest: string): string | undefined {
  const header = /^(.+?)_HEADER_[A-Z0-9_]+_ENV$/.exec(rest);
  if (header) return NAME.test(header[1]) ? header[1] : undefined;
  const setting = SETTINGS.filter((s) => rest.endsWith(`_${s}`)).sort((a, b) => b.length - a.length)[0];
  const name = setting && rest.slice(0, -(setting.length + 1));
  return name && NAME.test(name) ? name : undefined;
}

/** The variable holding a destination's URL, as an operator should set it. */
export function urlVariable(name: string): string {
  return LEGACY_PREFIX[name] ? `${LEGACY_PREFIX[name]}_URL` : `DESTINATION_${name.toUpperCase()}_URL`;
}

/**
 * Every destination named by a variable, plus `erp` and `email`. A
 * `DESTINATION_*` variable with an unknown setting stops the start (a typo
 * would otherwise leave a destination unauthenticated or on the dev sink).
 */
export function loadDestinationVariables(env: Env, relayTimeoutMs: number): Map<string, DestinationVariables> {
  const names = new Set(Object.keys(LEGACY_PREFIX));
  for (const key of Object.keys(env)) {
    if (!key.startsWith('DESTINATION_') || !env[key]) continue;
    const name = destinationName(key.slice('DESTINATION_'.length));
    if (!name) {
      throw new ConfigError(
        `${key}: not a destination setting (DESTINATION_<NAME>_ followed by ${SETTINGS.join(', ')} or HEADER_<HEADER>_ENV)`,
      );
    }
    names.add(name.toLowerCase());
  }
  return new Map([...names].map((name) => [name, readDestination(name, env, relayTimeoutMs)]));
}

function readDestination(name: string, env: Env, relayTimeoutMs: number): DestinationVariables {
  const prefix = `DESTINATION_${name.toUpperCase()}`;
  const legacy = LEGACY_PREFIX[name];
  /** The variable that sets `setting`, under either name (both set: refused, one would silently lose). */
  const variable = (setting: string): string | undefined => {
    const primary = `${prefix}_${setting}`;
    const alias = legacy ? `${legacy}_${setting}` : undefined;
    if (env[primary] && alias && env[alias]) throw new ConfigError(`${primary}: also set as ${alias}; keep one`);
    if (env[primary]) return primary;
    return alias && env[alias] ? alias : undefined;
  };
  const int = (setting: string, min: number, max: number): number | undefined => {
    const key = variable(setting);
    if (!key) return undefined;
    const raw = env[key]!;
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || value < min || value > max)
      throw new ConfigError(`${key}: expected an integer between ${min} and ${max}, got "${raw}"`);
    return value;
  };
  /** The value of the variable a setting names (a credential: neither it nor the name's value is echoed). */
  const named = (key: string): string => {
    const target = env[key]!;
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,99}$/.test(target))
      throw new ConfigError(`${key}: must name an environment variable (letters, digits, "_"), never hold the secret itself`);
    const value = env[target];
    if (!value) throw new ConfigError(`${key}: the variable it names (${target}) is not set`);
    return value;
  };
  const file = (setting: string): Buffer | undefined => {
    const key = variable(setting);
    if (!key) return undefined;
    try {
      return readFileSync(env[key]!);
    } catch {
      throw new ConfigError(`${key}: cannot read ${pathForMessage(env[key]!)}`);
    }
  };

  const urlKey = variable('URL');
  let url: string | undefined;
  if (urlKey) {
    let parsed: URL;
    try {
      parsed = new URL(env[urlKey]!);
    } catch {
      throw new ConfigError(`${urlKey}: not a valid URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`${urlKey}: expected a http or https URL`);
    if (parsed.username || parsed.password)
      throw new ConfigError(`${urlKey}: no credentials in the URL; use ${prefix}_BEARER_ENV or ${prefix}_HEADER_<NAME>_ENV`);
    url = env[urlKey]!.replace(/\/+$/, '');
  }

  const headers: Record<string, string> = {};
  const bearer = variable('BEARER_ENV');
  if (bearer) headers.authorization = `Bearer ${named(bearer)}`;
  for (const key of Object.keys(env).sort()) {
    const header = key.startsWith(`${prefix}_HEADER_`) && HEADER.exec(key.slice(prefix.length + 1));
    if (!header || !env[key]) continue;
    const headerName = header[1].toLowerCase().replace(/_/g, '-');
    if (['content-type', 'content-length', 'idempotency-key', 'host'].includes(headerName) || headerName.startsWith('webhook-')) {
      throw new ConfigError(`${key}: ${headerName} is set by the relay itself`);
    }
    if (headerName === 'authorization' && headers.authorization) throw new ConfigError(`${key}: Authorization is already set by ${bearer}`);
    headers[headerName] = named(key);
  }

  const signing = variable('SIGNING_SECRET_ENV');
  let signingKey: Buffer | undefined;
  if (signing) {
    const secret = named(signing);
    const base64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
    if (!/^[A-Za-z0-9+/]{22,}={0,2}$/.test(base64))
      throw new ConfigError(`${signing}: the secret it names is not a Standard Webhooks secret (whsec_ and base64 of at least 16 bytes)`);
    signingKey = Buffer.from(base64, 'base64');
  }

  const cert = file('TLS_CERT_FILE');
  const key = file('TLS_KEY_FILE');
  if (Boolean(cert) !== Boolean(key))
    throw new ConfigError(`${prefix}_TLS_CERT_FILE: a client certificate needs both ${prefix}_TLS_CERT_FILE and ${prefix}_TLS_KEY_FILE`);
  const ca = file('TLS_CA_FILE');

  // 0 (or unset): unlimited.
  const perSecond = int('RATE_LIMIT', 0, 100_000) || undefined;
  const burst = int('RATE_BURST', 1, 100_000);
  const burstKey = variable('RATE_BURST');
  if (burst !== undefined && perSecond === undefined)
    throw new ConfigError(`${burstKey}: needs ${burstKey!.replace(/RATE_BURST$/, 'RATE_LIMIT')}`);
  return {
    url,
    timeoutMs: int('TIMEOUT_MS', 10, relayTimeoutMs),
    concurrency: int('CONCURRENCY', 1, 256),
    circuit: { failures: int('CIRCUIT_FAILURES', 1, 1000), cooldownMs: int('CIRCUIT_COOLDOWN_MS', 10, 3_600_000) },
    rateLimit: perSecond !== undefined ? { perSecond, burst } : undefined,
    headers,
    signingKey,
    tls: cert || ca ? { cert, key, ca } : undefined,
  };
}

/** A destination's settings: its variables, else the class's defaults, else the relay's. */
export function settingsFor(
  variables: DestinationVariables | undefined,
  defaults: DestinationDefaults,
  relayTimeoutMs: number,
): DestinationSettings {
  const v = variables ?? { circuit: {}, headers: {} };
  return {
    url: v.url,
    timeoutMs: v.timeoutMs ?? relayTimeoutMs,
    concurrency: v.concurrency ?? defaults.concurrency ?? 8,
    circuit: { failures: v.circuit.failures ?? 5, cooldownMs: v.circuit.cooldownMs ?? 30_000 },
    rateLimit: v.rateLimit
      ? { perSecond: v.rateLimit.perSecond, burst: v.rateLimit.burst ?? Math.max(1, v.rateLimit.perSecond) }
      : undefined,
    headers: v.headers,
    signingKey: v.signingKey,
    tls: v.tls,
  };
}
