import { Injectable } from '@nestjs/common';
import { Context, Link, Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { traceparentOf, Tracing } from '../tracing/tracing';
import { InboxEvent } from './inbox.types';

/**
 * The spans of one batch of claimed events. Each event gets a processing span
 * that continues the trace its request stored in the row, with a child for the
 * time it waited to be claimed and one for its handler; a batch of several gets
 * one more span that links the events' traces (it has no single parent).
 */
export class BatchTrace {
  private readonly spans = new Map<InboxEvent, Span>();
  private readonly batch?: Span;
  private traceparents?: Map<string, string>;

  constructor(
    private readonly tracing: Tracing,
    events: InboxEvent[],
  ) {
    const started = Date.now();
    if (events.length > 1) {
      const links = events.map((e) => tracing.link(e.traceContext)).filter((l): l is Link => l !== undefined);
      this.batch = tracing.startSpan('inbox.batch', { root: true, links, attributes: { 'inbox.batch.size': events.length } });
    }
    for (const event of events) {
      const parent = tracing.continueFrom(event.traceContext);
      // From the commit of the row to the start of its processing: queueing, polling, claiming.
      const receivedAt = event.receivedAt.getTime();
      if (receivedAt < started) tracing.startSpan('inbox.claim_wait', { startTime: receivedAt }, parent).end(started);
      const span = tracing.startSpan(
        'inbox.process',
        {
          kind: SpanKind.CONSUMER,
          startTime: started,
          attributes: {
            'inbox.id': event.id,
            'webhook.endpoint_id': event.endpointId,
            'webhook.provider': event.provider,
            'webhook.event_type': event.eventType,
            'inbox.attempt': event.attempts + 1,
          },
        },
        parent,
      );
      this.spans.set(event, span);
    }
  }

  /** Each event's processing span, by inbox row id, for the transaction that serves them: the outbox rows an event writes continue from it. */
  sources(): ReadonlyMap<string, string> {
    return (this.traceparents ??= new Map([...this.spans].map(([event, span]) => [event.id, traceparentOf(span)])));
  }

  /** Runs one event's handler in its own span, active so that its writes and log lines belong to the event. */
  handler<T>(event: InboxEvent, fn: () => Promise<T>): Promise<T> {
    const span = this.tracing.startSpan('inbox.handler', undefined, this.parentOf(event));
    return this.timed(span, () => this.tracing.run(span, fn));
  }

  /** One batch handler call for many events: a handler span in each event's trace, the batch span active. */
  together<T>(events: InboxEvent[], fn: () => Promise<T>): Promise<T> {
    const spans = events.map((e) =>
      this.tracing.startSpan('inbox.handler', { attributes: { 'inbox.batch_handler': true } }, this.parentOf(e)),
    );
    const run = () => (this.batch ? this.tracing.run(this.batch, fn) : fn());
    return run().finally(() => spans.forEach((s) => s.end()));
  }

  /** The transition the attempt ended in: done, ignored, quarantined, retry or lost_lease. */
  settled(event: InboxEvent, outcome: string): void {
    const span = this.spans.get(event);
    span?.setAttribute('inbox.outcome', outcome);
    if (outcome === 'retry' || outcome === 'quarantined') span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  }

  end(): void {
    for (const span of this.spans.values()) span.end();
    this.batch?.end();
  }

  private parentOf(event: InboxEvent): Context {
    return this.tracing.under(this.spans.get(event)!);
  }

  private async timed<T>(span: Span, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name });
      throw error;
    } finally {
      span.end();
    }
  }
}

/** Starts a batch's spans, or nothing when tracing is off. */
@Injectable()
export class InboxTraces {
  constructor(private readonly tracing: Tracing) {}

  begin(events: InboxEvent[]): BatchTrace | undefined {
    return this.tracing.enabled ? new BatchTrace(this.tracing, events) : undefined;
  }

  beginOne(event: InboxEvent): BatchTrace | undefined {
    return this.tracing.enabled ? new BatchTrace(this.tracing, [event]) : undefined;
  }
}
