import { Injectable } from '@nestjs/common';
import { Link, Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { traceparentOf, Tracing } from '../tracing/tracing';
import { OperationOutcome, OutboxEntry } from './destinations/destination';

/**
 * The spans of one relay round. Each delivery is a client span continuing the
 * trace of the processing that wrote the entry (stored in the row); its
 * traceparent goes to the destination, whose own trace then joins. The round
 * itself is one span linking the entries' traces.
 */
export class RoundTrace {
  private readonly round: Span;
  private readonly spans = new Map<OutboxEntry, Span>();

  constructor(
    private readonly tracing: Tracing,
    entries: OutboxEntry[],
  ) {
    const links = entries.map((e) => tracing.link(e.traceContext)).filter((l): l is Link => l !== undefined);
    this.round = tracing.startSpan('outbox.relay_round', { root: true, links, attributes: { 'outbox.batch.size': entries.length } });
    for (const entry of entries) {
      const span = tracing.startSpan(
        'outbox.deliver',
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'outbox.id': entry.id,
            'outbox.destination': entry.destination,
            'outbox.operation_type': entry.operationType,
            'outbox.attempt': entry.attempts,
          },
        },
        tracing.continueFrom(entry.traceContext),
      );
      this.spans.set(entry, span);
    }
  }

  /** The `traceparent` header of the entry's delivery request. */
  traceparent(entry: OutboxEntry): string {
    return traceparentOf(this.spans.get(entry)!);
  }

  /** Runs `fn` with the delivery's span active (log lines inside carry its ids). */
  during<T>(entry: OutboxEntry, fn: () => T): T {
    return this.tracing.run(this.spans.get(entry)!, fn);
  }

  /** The outcome query before a resend: a client span of its own under the delivery. */
  queryStarted(entry: OutboxEntry): Span {
    return this.tracing.startSpan('outbox.query_outcome', { kind: SpanKind.CLIENT }, this.tracing.under(this.spans.get(entry)!));
  }

  queryEnded(span: Span, outcome: OperationOutcome): void {
    span.setAttribute('outbox.query.result', outcome);
    span.end();
  }

  /** What the round recorded for the entry: delivered, retry, dead, unresolved, deferred or lost_lease. */
  recorded(entry: OutboxEntry, outcome: string, statusCode: number | undefined): void {
    const span = this.spans.get(entry)!;
    span.setAttribute('outbox.outcome', outcome);
    if (statusCode !== undefined) span.setAttribute('http.response.status_code', statusCode);
    if (outcome !== 'delivered' && outcome !== 'deferred') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  }

  end(): void {
    for (const span of this.spans.values()) span.end();
    this.round.end();
  }
}

/** Starts a round's spans, or nothing when tracing is off. */
@Injectable()
export class OutboxTraces {
  constructor(private readonly tracing: Tracing) {}

  begin(entries: OutboxEntry[]): RoundTrace | undefined {
    return this.tracing.enabled ? new RoundTrace(this.tracing, entries) : undefined;
  }
}
