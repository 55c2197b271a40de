import { Inject, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import {
  context,
  Context,
  diag,
  DiagLogLevel,
  Link,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanOptions,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { isSpanContextValid } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { TracerSdk } from './tracer-sdk';

/** Tests read finished spans from an in-memory exporter given under this token (tracing on, spans exported at once). */
export const SPAN_EXPORTER = Symbol('SPAN_EXPORTER');

/** W3C `traceparent` of a span: what an inbox or outbox row stores and a destination receives. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags & 1 ? '01' : '00'}`;
}

/**
 * pino `mixin` with tracing on: every log line written inside a span carries its
 * trace_id and span_id. Always a fresh object: pino merges the line's own fields into it.
 */
export function traceLogFields(): object {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/**
 * OpenTelemetry traces, off by default. When off, `enabled` is false and the hot
 * paths test it before building anything, so tracing costs one branch per step.
 * When on, it owns the SDK: a tracer provider with the configured sampler and
 * exporter, the AsyncLocalStorage context manager (log lines carry the active
 * span's ids) and the W3C propagator.
 *
 * Across the database, trace context travels explicitly: each row stores the
 * traceparent of the span that wrote it, and the next stage continues from it.
 * A traceparent that came from outside (a provider's request) is only ever linked.
 */
@Injectable()
export class Tracing implements OnApplicationShutdown {
  readonly enabled: boolean;
  private readonly sdk?: TracerSdk;
  private readonly tracer?: Tracer;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Optional() @Inject(SPAN_EXPORTER) testExporter?: SpanExporter) {
    this.enabled = Boolean(testExporter) || config.tracing.enabled;
    if (!this.enabled) return;
    // Loaded only when on: the SDK and its exporter cost about 300 ms of start-up and their memory.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a synchronous load in a constructor, on demand
    const { startTracerSdk } = require('./tracer-sdk') as typeof import('./tracer-sdk');
    this.sdk = startTracerSdk(config.tracing, testExporter);
    this.tracer = this.sdk.tracer;
    // The SDK's own trouble (an unreachable collector, a full queue) in the service's log, errors only.
    const logger = new Logger('OpenTelemetry');
    const log = (message: string) => logger.error(message.slice(0, 300));
    diag.setLogger(
      { error: log, warn: () => undefined, info: () => undefined, debug: () => undefined, verbose: () => undefined },
      DiagLogLevel.ERROR,
    );
  }

  /** A new span under `parent` (default: the active context). Only when enabled: callers test `enabled` first. */
  startSpan(name: string, options?: SpanOptions, parent?: Context): Span {
    if (!this.tracer) throw new Error('tracing is off: test Tracing.enabled before starting a span');
    return this.tracer.startSpan(name, options, parent ?? context.active());
  }

  /** A context whose parent is `span`, for its children. */
  under(span: Span): Context {
    return trace.setSpan(ROOT_CONTEXT, span);
  }

  /** Runs `fn` with `span` active: child spans and log lines inside it belong to it. */
  run<T>(span: Span, fn: () => T): T {
    return context.with(trace.setSpan(context.active(), span), fn);
  }

  /**
   * The context a stored traceparent continues: its span becomes the parent (the
   * row was written by this service, so the trace is ours). A missing or invalid
   * value starts a new trace.
   */
  continueFrom(traceparent: string | null | undefined): Context {
    const spanContext = traceparent && this.sdk ? this.sdk.parseTraceParent(traceparent) : null;
    if (!spanContext || !isSpanContextValid(spanContext)) return ROOT_CONTEXT;
    return trace.setSpanContext(ROOT_CONTEXT, { ...spanContext, isRemote: true });
  }

  /** A link to another trace (a batch's members, a provider's own traceparent); undefined for an invalid value. */
  link(traceparent: string | null | undefined, attributes?: Link['attributes']): Link | undefined {
    if (typeof traceparent !== 'string' || traceparent.length > 512 || !this.sdk) return undefined;
    const spanContext = this.sdk.parseTraceParent(traceparent.trim());
    return spanContext && isSpanContextValid(spanContext) ? { context: spanContext, attributes } : undefined;
  }

  /**
   * The traceparent an outbox entry of `sourceEventId` written in the transaction `tx`
   * continues: the processing span of that event, which the transaction carries (one
   * batch handler may write the entries of many events in one statement); else the active span's.
   */
  sourceTraceparent(tx: { traceparentOf(inboxId: string): string | undefined }, sourceEventId: string | null): string | undefined {
    const bound = sourceEventId === null ? undefined : tx.traceparentOf(sourceEventId);
    if (bound) return bound;
    const active = trace.getSpan(context.active());
    return active ? traceparentOf(active) : undefined;
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.sdk) return;
    // Export what is still queued, then give the API back (a later app in this process may register again).
    await this.sdk.provider.shutdown().catch(() => undefined);
    trace.disable();
    context.disable();
    propagation.disable();
    diag.disable();
  }
}
