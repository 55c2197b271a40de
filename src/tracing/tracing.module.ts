import { DynamicModule, Global, Module } from '@nestjs/common';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SPAN_EXPORTER, Tracing } from './tracing';

/** OpenTelemetry traces for every module; a leaf: it imports nothing of the product but its config. */
@Global()
@Module({})
export class TracingModule {
  /** `testExporter`: tests read spans from memory (tracing on whatever the environment says). */
  static forRoot(testExporter?: SpanExporter): DynamicModule {
    return {
      module: TracingModule,
      providers: [Tracing, ...(testExporter ? [{ provide: SPAN_EXPORTER, useValue: testExporter }] : [])],
      exports: [Tracing],
    };
  }
}
