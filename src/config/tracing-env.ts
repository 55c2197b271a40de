import { ConfigError } from './config.error';

/** Where finished spans go. */
export type SpanExporterName = 'otlp' | 'console';

export type TraceSamplerName =
  'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

export interface TracingConfig {
  /** Off by default: on when an exporter is named or an OTLP endpoint is set (and OTEL_SDK_DISABLED is not true). */
  enabled: boolean;
  exporters: SpanExporterName[];
  sampler: { name: TraceSamplerName; ratio: number };
  serviceName: string;
}

type Env = Record<string, string | undefined>;

const SAMPLERS: readonly TraceSamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

const set = (env: Env, name: string) => env[name] !== undefined && env[name]!.trim() !== '';

/**
 * Validates the standard OpenTelemetry variables this service honours. The SDK
 * reads the exporter's own ones (endpoint, headers, timeout, compression,
 * certificates, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*) from the environment itself:
 * the one exception to "only config reads the environment". They are checked
 * here anyway, so a typo stops the start instead of silently dropping traces.
 * Header values are never echoed: they usually carry an API key.
 */
export function loadTracingConfig(env: Env): TracingConfig {
  const disabled = boolean(env, 'OTEL_SDK_DISABLED');
  let exporters: SpanExporterName[] = [];
  if (set(env, 'OTEL_TRACES_EXPORTER')) {
    const names = env.OTEL_TRACES_EXPORTER!.split(',').map((n) => n.trim());
    for (const name of names) {
      if (!['otlp', 'console', 'none'].includes(name)) {
        throw new ConfigError(`OTEL_TRACES_EXPORTER: unsupported exporter "${name}" (expected otlp, console or none)`);
      }
    }
    exporters = names.includes('none') ? [] : ([...new Set(names)] as SpanExporterName[]);
  } else if (set(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') || set(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')) {
    exporters = ['otlp'];
  }

  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) httpUrl(env, name);
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) {
    if (set(env, name) && env[name]!.trim() !== 'http/protobuf') {
      throw new ConfigError(`${name}: only http/protobuf is supported (OTLP over HTTP, port 4318 on a collector)`);
    }
  }
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) keyValueList(env, name);
  keyValueList(env, 'OTEL_RESOURCE_ATTRIBUTES');
  for (const name of ['OTEL_EXPORTER_OTLP_COMPRESSION', 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION']) {
    if (set(env, name) && !['gzip', 'none'].includes(env[name]!.trim())) throw new ConfigError(`${name}: expected gzip or none`);
  }
  for (const name of [
    'OTEL_EXPORTER_OTLP_TIMEOUT',
    'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
    'OTEL_BSP_SCHEDULE_DELAY',
    'OTEL_BSP_EXPORT_TIMEOUT',
    'OTEL_BSP_MAX_QUEUE_SIZE',
    'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  ]) {
    if (set(env, name) && !/^[1-9]\d{0,8}$/.test(env[name]!.trim())) throw new ConfigError(`${name}: expected a positive integer`);
  }

  const samplerName = (env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on') as TraceSamplerName;
  if (!SAMPLERS.includes(samplerName)) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER: expected one of ${SAMPLERS.join(', ')}`);
  }
  let ratio = 1;
  if (set(env, 'OTEL_TRACES_SAMPLER_ARG') && samplerName.endsWith('traceidratio')) {
    ratio = Number(env.OTEL_TRACES_SAMPLER_ARG);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
      throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG: expected a sampling ratio between 0 and 1, got "${env.OTEL_TRACES_SAMPLER_ARG}"`);
    }
  }

  return {
    enabled: !disabled && exporters.length > 0,
    exporters,
    sampler: { name: samplerName, ratio },
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'webhook-inbox',
  };
}

function boolean(env: Env, name: string): boolean {
  if (!set(env, name)) return false;
  const value = env[name]!.trim().toLowerCase();
  if (value !== 'true' && value !== 'false') throw new ConfigError(`${name}: expected true or false`);
  return value === 'true';
}

function httpUrl(env: Env, name: string): void {
  if (!set(env, name)) return;
  let url: URL;
  try {
    url = new URL(env[name]!.trim());
  } catch {
    throw new ConfigError(`${name}: not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name}: expected an http or https URL`);
}

/** `key=value,key=value` (W3C Baggage-like, as the OpenTelemetry spec defines these variables). */
function keyValueList(env: Env, name: string): void {
  if (!set(env, name)) return;
  for (const [i, item] of env[name]!.split(',').entries()) {
    const eq = item.indexOf('=');
    if (eq <= 0 || item.slice(0, eq).trim() === '') {
      throw new ConfigError(`${name}: entry ${i + 1} is not "key=value"`);
    }
  }
}
