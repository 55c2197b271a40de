import { Inject, Injectable } from '@nestjs/common';
import { Link } from '@opentelemetry/api';
import { PgNotifications } from '../database/pg-notifications';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { isDeadlock, isInvalidData } from '../common/database-errors';
import { Tracing } from '../tracing/tracing';
import { GroupCommit, QueueFullError, WaitExpiredError } from './group-commit';
import { BusyError, ServiceUnavailableError } from '../common/errors';
import { HandlerRegistry } from './handler.registry';
import { identity, InboxRepository } from './inbox.repository';
import { AcceptRequest, AcceptResult, EventIdentity, INBOX_CHANNEL, InboxEvent } from './inbox.types';
import { WORKER_INTAKE, WorkerIntake } from './worker-intake.port';

/**
 * The inbox as ingestion and reconciliation see it: acceptance, and what it already
 * holds. Retention, payload keys and operators have services of their own.
 */
@Injectable()
export class InboxService {
  private readonly acceptGroup: GroupCommit<AcceptRequest, AcceptResult | Error>;

  constructor(
    private readonly repository: InboxRepository,
    private readonly notifications: PgNotifications,
    private readonly handlers: HandlerRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tracing: Tracing,
    @Inject(WORKER_INTAKE) private readonly worker: WorkerIntake,
  ) {
    this.acceptGroup = new GroupCommit<AcceptRequest, AcceptResult | Error>({
      ...config.ingestBatch,
      queueMax: config.intake.queueMax,
      waiterDeadlineMs: config.intake.queueWaitMs,
      key: identity,
      flush: (requests) => this.acceptTogether(requests),
    });
  }

  /**
   * Claims the event identity atomically and commits it as pending work, sharing
   * the commit with concurrent requests. Resolves only after that commit; rejects
   * if the outcome is not known to be committed.
   */
  async accept(request: AcceptRequest): Promise<AcceptResult> {
    let result: AcceptResult | Error;
    try {
      result = await this.acceptGroup.submit(request);
    } catch (error) {
      // A full queue or a wait past its deadline: 503, and the sender's retry finds the row (or not) once.
      if (error instanceof QueueFullError) throw new BusyError('intake_busy', 1);
      if (error instanceof WaitExpiredError) throw new ServiceUnavailableError('accept_timeout', 1);
      throw error;
    }
    if (result instanceof Error) throw result;
    if (result.outcome === 'duplicate' && result.status === 'ignored' && request.takesOverIgnored && request.status === 'pending') {
      if (await this.repository.takeOverIgnored(request, result.id)) {
        result = { ...result, outcome: 'accepted', status: 'pending', digestConflict: false };
      }
    }
    // Wake a worker now rather than at the next poll (throttled, best effort); one this instance's worker holds needs none.
    if (result.outcome === 'accepted' && result.status === 'pending') this.notifications.notify(INBOX_CHANNEL);
    return result;
  }

  /** Accepts waiting for a flush (a gauge on /metrics). */
  acceptsQueued(): number {
    return this.acceptGroup.queued;
  }

  /** One span for a shared commit, linking the requests' traces (it has no single parent). */
  private async acceptTogether(requests: AcceptRequest[]): Promise<(AcceptResult | Error)[]> {
    if (!this.tracing.enabled) return this.acceptTogetherUntraced(requests);
    const links = requests.map((r) => this.tracing.link(r.traceContext)).filter((l): l is Link => l !== undefined);
    const span = this.tracing.startSpan('inbox.accept_batch', { root: true, links, attributes: { 'inbox.batch.size': requests.length } });
    try {
      return await this.acceptTogetherUntraced(requests);
    } finally {
      span.end();
    }
  }

  private async acceptTogetherUntraced(requests: AcceptRequest[]): Promise<(AcceptResult | Error)[]> {
    try {
      // This instance's worker, if it can take them now, gets the new events claimed by the insert itself.
      const results = await this.repository.acceptMany(requests, this.worker.insertClaim());
      const claimed = results.flatMap((r): InboxEvent[] => (r.claimed ? [r.claimed] : []));
      if (claimed.length > 0) this.worker.handOver(claimed);
      const pending = requests.filter(
        (_, i) => results[i].outcome === 'accepted' && results[i].status === 'pending' && !results[i].claimed,
      );
      if (pending.length > 0) this.worker.leftPending(pending.map((r) => r.tenantId));
      return results;
    } catch (error) {
      // One body PostgreSQL refuses must not fail the others: answer each alone.
      // A deadlock between two instances' batches is safe to retry the same way.
      if (requests.length === 1 || !(isInvalidData(error) || isDeadlock(error))) throw error;
      return Promise.all(
        requests.map((r) =>
          this.repository.acceptMany([r]).then(
            ([result]) => result,
            (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
          ),
        ),
      );
    }
  }

  /**
   * Per identity of `ids`, whether the inbox already holds it (reconciliation skips those); with
   * `takeableBy`, not counting rows that endpoint's own copy would take over.
   */
  async present(ids: EventIdentity[], takeableBy?: string): Promise<boolean[]> {
    if (ids.length === 0) return [];
    const known = await this.repository.existing(ids, takeableBy);
    return ids.map((i) => known.has(identity(i)));
  }

  /** Who reads which payload paths of `provider`'s events (for checking an endpoint's `omit` at start). */
  payloadReaders(provider: string, types?: ReadonlySet<string>): { handler: string; type: string; reads?: readonly string[] }[] {
    return this.handlers.readersOf(provider, types);
  }
}
