import { Inject, Injectable, Logger } from '@nestjs/common';
import { MAX_RETRY_AFTER_MS, backoffDelayMs } from '../common/backoff';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { ProviderUnavailableError } from './provider-api.errors';
import { ReadBudget } from './read-budget';
import { EventToConfirm, ProviderReading, ProviderStateReader, ReadSubject } from './state-reader';
import { StateReaderRegistry } from './state-reader.registry';

/** What the confirm step decided for one event before its transaction. */
export type ReadOutcome =
  /** Read: the handler decides from `reading`. */
  | { kind: 'read'; reading: ProviderReading }
  /** No answer, or no budget now: back to pending at `until`, not an attempt. */
  | { kind: 'defer'; until: Date; why: string }
  /** The read itself failed in a way that is an answer (a 4xx): an attempt like any failure. */
  | { kind: 'failed'; error: unknown };

interface Wanted<E extends EventToConfirm> {
  event: E;
  endpoint: EndpointConfig;
  reader: ProviderStateReader;
  subject: ReadSubject;
}

/**
 * Confirm reads, before the business transaction takes its locks. Each API key's
 * reads come out of its shared budget; what the budget cannot grant now is handed
 * back with a due time at the key's rate, so a claimed batch never waits out its
 * lease for reads. The granted reads of a batch run at once (each within
 * PROVIDER_API_TIMEOUT_MS, a quarter of the lease at most).
 */
@Injectable()
export class EventReads {
  private readonly logger = new Logger(EventReads.name);
  /** Consecutive unanswered reads per key on this instance: the backoff of its events. */
  private readonly failures = new Map<string, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly readers: StateReaderRegistry,
    private readonly budget: ReadBudget,
    private readonly clock: Clock,
  ) {}

  /** The events among `events` whose transition waits for a read, with what to read. */
  private wanted<E extends EventToConfirm>(events: E[]): Wanted<E>[] {
    const wanted: Wanted<E>[] = [];
    for (const event of events) {
      const endpoint = this.config.endpoints.get(event.endpointId);
      if (!endpoint?.api?.confirm || event.payload == null) continue;
      const reader = this.readers.find(endpoint.provider);
      const subject = reader?.subject(event);
      if (reader && subject) wanted.push({ event, endpoint, reader, subject });
    }
    return wanted;
  }

  /** Whether the worker's confirm step would read the provider's API before `event`'s transition (no read made here). */
  needsRead<E extends EventToConfirm>(event: E): boolean {
    return this.wanted([event]).length > 0;
  }

  /** Reads for those of `events` that need one; an event absent from the answer needs none. */
  async prepare<E extends EventToConfirm>(events: E[]): Promise<Map<E, ReadOutcome>> {
    const outcomes = new Map<E, ReadOutcome>();
    const byKey = new Map<string, Wanted<E>[]>();
    for (const w of this.wanted(events)) {
      const keyId = w.endpoint.api!.key.id;
      byKey.set(keyId, [...(byKey.get(keyId) ?? []), w]);
    }
    await Promise.all([...byKey].map(([keyId, wanted]) => this.readWithKey(keyId, wanted, outcomes)));
    return outcomes;
  }

  private async readWithKey<E extends EventToConfirm>(keyId: string, wanted: Wanted<E>[], outcomes: Map<E, ReadOutcome>): Promise<void> {
    const granted = await this.budget.take(keyId, wanted.length);
    const now = this.clock.now().getTime();
    wanted.slice(granted).forEach((w, i) => {
      outcomes.set(w.event, { kind: 'defer', until: new Date(now + this.budget.delayMsFor(i + 1)), why: 'read_budget' });
    });
    let unavailable: ProviderUnavailableError | undefined;
    await Promise.all(
      wanted.slice(0, granted).map(async (w) => {
        try {
          outcomes.set(w.event, { kind: 'read', reading: await w.reader.read(w.endpoint, w.event, w.subject) });
        } catch (error) {
          if (!(error instanceof ProviderUnavailableError)) {
            outcomes.set(w.event, { kind: 'failed', error });
            return;
          }
          unavailable ??= error;
          outcomes.set(w.event, { kind: 'defer', until: new Date(0), why: `provider_${error.message}` });
        }
      }),
    );
    if (!unavailable) {
      this.failures.delete(keyId);
      return;
    }
    const failures = (this.failures.get(keyId) ?? 0) + 1;
    this.failures.set(keyId, failures);
    // Retry-After when the provider gave one (a day at most, as the relay's), else capped backoff;
    // never sooner than RETRY_BASE_MS.
    const retryAfterMs = unavailable.retryAfterMs === undefined ? undefined : Math.min(unavailable.retryAfterMs, MAX_RETRY_AFTER_MS);
    const delay = Math.max(this.config.retry.baseMs, retryAfterMs ?? backoffDelayMs(failures, this.config.retry));
    const until = new Date(this.clock.now().getTime() + delay);
    for (const [event, outcome] of outcomes) {
      if (outcome.kind === 'defer' && outcome.until.getTime() === 0) outcomes.set(event, { ...outcome, until });
    }
    const endpoints = [...new Set(wanted.map((w) => w.endpoint.id))];
    // The reason and status only: a provider's message may quote part of the key.
    this.logger.warn(
      { endpoints, keyId, reason: unavailable.reason, status: unavailable.status, failures, retryInMs: delay },
      unavailable.reason === 'credentials_refused'
        ? "provider API refused the endpoint's api key: confirm reads wait; check the variable named by api.env"
        : 'provider API gave no answer: confirm reads wait (not counted as attempts)',
    );
  }
}
