import { ConfigError } from './config.error';
import { loadTracingConfig } from './tracing-env';

function errorOf(env: Record<string, string>): string {
  try {
    loadTracingConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadTracingConfig (the OTEL_* variables)', () => {
  it('is off by default, and with a service name or sampler alone', () => {
    expect(loadTracingConfig({})).toEqual({
      enabled: false,
      exporters: [],
      sampler: { name: 'parentbased_always_on', ratio: 1 },
      serviceName: 'webhook-inbox',
    });
    expect(loadTracingConfig({ OTEL_SERVICE_NAME: 'inbox-eu', OTEL_TRACES_SAMPLER: 'always_on' }).enabled).toBe(false);
  });

  it('is on with an OTLP endpoint or a named exporter, and off again with OTEL_SDK_DISABLED or exporter none', () => {
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toMatchObject({
      enabled: true,
      exporters: ['otlp'],
    });
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/v1/traces' }).enabled).toBe(true);
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: 'otlp,console' }).exporters).toEqual(['otlp', 'console']);
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
  });

  it('reads the sampler and its ratio', () => {
    expect(loadTracingConfig({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }).sampler).toEqual({
      name: 'parentbased_traceidratio',
      ratio: 0.01,
    });
    expect(loadTracingConfig({ OTEL_SERVICE_NAME: ' inbox-eu ' }).serviceName).toBe('inbox-eu');
  });

  it.each([
    [{ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED: expected true or false'],
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER: unsupported exporter "zipkin"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: expected an http or https URL'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a valid URL'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf is supported'],
    [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'OTEL_TRACES_SAMPLER: expected one of'],
    [
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      'OTEL_TRACES_SAMPLER_ARG: expected a sampling ratio between 0 and 1',
    ],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG'],
    [{ OTEL_EXPORTER_OTLP_TIMEOUT: '10s' }, 'OTEL_EXPORTER_OTLP_TIMEOUT: expected a positive integer'],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: '-1' }, 'OTEL_BSP_MAX_QUEUE_SIZE: expected a positive integer'],
    [{ OTEL_EXPORTER_OTLP_COMPRESSION: 'br' }, 'OTEL_EXPORTER_OTLP_COMPRESSION: expected gzip or none'],
    [{ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,oops' }, 'OTEL_RESOURCE_ATTRIBUTES: entry 2 is not "key=value"'],
  ])('refuses %j with one line naming the variable', (env, message) => {
    expect(errorOf(env)).toContain(message);
  });

  it('never echoes an exporter header value (it usually holds an API key)', () => {
    const message = errorOf({ OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key' + 'sk_live_secret_value_123' });
    expect(message).toBe('OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not "key=value"');
  });
});
