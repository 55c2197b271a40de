import { Injectable, Logger } from '@nestjs/common';
import { EventReads } from '../provider-api/event-reads';
import { ProviderReading } from '../provider-api/state-reader';
import { AttemptFailures, AttemptOutcome, logFields } from './attempt-failures';
import { InboxRepository } from './inbox.repository';
import { InboxEvent } from './inbox.types';

/** The worker's confirm step: the provider's API read before a high-impact transition, outside the transaction. */
@Injectable()
export class ConfirmStep {
  private readonly logger = new Logger(ConfirmStep.name);

  constructor(
    private readonly reads: EventReads,
    private readonly repository: InboxRepository,
    private readonly failures: AttemptFailures,
  ) {}

  /**
   * Confirm reads of the claimed `events` that reach a handler (`handled`), before the transaction takes its locks. A read's answer is the
   * handler's `confirmation` (on a copy of the event) and is stored on its row; an
   * event without one yet is handed back (`deferred`, not an attempt) or, if the read
   * failed with an answer, fails its attempt. Resolves with the outcome of each event
   * that goes no further now (`early`) and the events to process, in claim order (`ready`).
   */
  async run(
    events: InboxEvent[],
    handled: (event: InboxEvent) => boolean,
  ): Promise<{ early: Map<InboxEvent, AttemptOutcome>; ready: InboxEvent[] }> {
    const early = new Map<InboxEvent, AttemptOutcome>();
    const planned = await this.reads.prepare(events.filter(handled));
    if (planned.size === 0) return { early, ready: events };
    const confirmations = new Map<InboxEvent, ProviderReading>();
    const lease = events[0].lease;
    const readings: { id: string; reading: ProviderReading }[] = [];
    const deferrals: { event: InboxEvent; until: Date; why: string }[] = [];
    for (const [event, outcome] of planned) {
      if (outcome.kind === 'read') {
        confirmations.set(event, outcome.reading);
        readings.push({ id: event.id, reading: outcome.reading });
      } else if (outcome.kind === 'defer') {
        deferrals.push({ event, until: outcome.until, why: outcome.why });
      } else {
        early.set(event, await this.failures.record(event, outcome.error));
      }
    }
    if (readings.length > 0) await this.repository.recordReadings(lease, readings);
    if (deferrals.length > 0) {
      const held = await this.repository.defer(
        lease,
        deferrals.map((d) => ({ id: d.event.id, until: d.until, why: d.why })),
      );
      for (const { event, why, until } of deferrals) {
        early.set(event, held.has(event.id) ? 'deferred' : 'lost_lease');
        this.logger.debug(logFields(event, { why, nextAttemptAt: until.toISOString() }), 'event waits for its confirm read');
      }
    }
    const ready = events.filter((e) => !early.has(e)).map((e) => (confirmations.has(e) ? { ...e, confirmation: confirmations.get(e) } : e));
    return { early, ready };
  }
}
