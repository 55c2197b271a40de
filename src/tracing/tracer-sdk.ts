import { Tracer } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  Sampler,
  SimpleSpanProcessor,
  SpanExporter,
  SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { TracingConfig } from '../config/tracing-env';

export interface TracerSdk {
  provider: NodeTracerProvider;
  tracer: Tracer;
  parseTraceParent: typeof parseTraceParent;
}

/**
 * The OpenTelemetry SDK, registered globally: a tracer provider with the configured
 * sampler and exporters (or the test's exporter, exporting each span at once), the
 * AsyncLocalStorage context manager and the W3C propagator. Required only when
 * tracing is on (see Tracing).
 */
export function startTracerSdk(config: TracingConfig, testExporter?: SpanExporter): TracerSdk {
  const provider = new NodeTracerProvider({
    resource: defaultResource()
      .merge(resourceFromAttributes({ 'service.name': config.serviceName }))
      .merge(detectResources({ detectors: [envDetector] })),
    sampler: sampler(config.sampler),
    spanProcessors: testExporter ? [new SimpleSpanProcessor(testExporter)] : processors(config),
  });
  provider.register();
  return { provider, tracer: provider.getTracer('webhook-inbox'), parseTraceParent };
}

function sampler({ name, ratio }: TracingConfig['sampler']): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** OTLP/HTTP (protobuf) to the collector the OTEL_EXPORTER_OTLP_* variables name, in batches; console for a quick look. */
function processors(config: TracingConfig): SpanProcessor[] {
  return config.exporters.map((name) =>
    name === 'otlp' ? new BatchSpanProcessor(new OTLPTraceExporter()) : new SimpleSpanProcessor(new ConsoleSpanExporter()),
  );
}
