import { Inject, Injectable } from '@nestjs/common';
import { PgNotifications } from '../database/pg-notifications';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { isDeadlock, isInvalidData } from '../common/database-errors';
import { GroupCommit } from './group-commit';
import { identity, InboxRepository } from './inbox.repository';
import { AcceptRequest, AcceptResult, INBOX_CHANNEL } from './inbox.types';

/** The inbox as ingestion and retention see it (operators use InboxAdminService). */
@Injectable()
export class InboxService {
  private readonly acceptGroup: GroupCommit<AcceptRequest, AcceptResult | Error>;

  constructor(
    private readonly repository: InboxRepository,
    private readonly notifications: PgNotifications,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.acceptGroup = new GroupCommit<AcceptRequest, AcceptResult | Error>({
      ...config.ingestBatch,
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
    const result = await this.acceptGroup.submit(request);
    if (result instanceof Error) throw result;
    // Wake a worker now rather than at the next poll (throttled, best effort).
    if (result.outcome === 'accepted' && result.status === 'pending') this.notifications.notify(INBOX_CHANNEL);
    return result;
  }

  private async acceptTogether(requests: AcceptRequest[]): Promise<(AcceptResult | Error)[]> {
    try {
      return await this.repository.acceptMany(requests);
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

  /** Per identity of `ids`, whether the inbox already holds it (reconciliation skips those). */
  async present(ids: { sourceScope: string; eventId: string }[]): Promise<boolean[]> {
    if (ids.length === 0) return [];
    const known = await this.repository.existing(ids);
    return ids.map((i) => known.has(identity(i)));
  }

  // ---- Retention (maintenance role): one bounded batch per call ----

  /** Drops payloads of done/ignored events received before `before` (identity, digest, status kept). */
  purgePayloads(before: Date, limit: number): Promise<number> {
    return this.repository.purgePayloads(before, limit);
  }

  /** Deletes done/ignored events received before `before`: a resend after this is accepted as new. */
  deleteIdentities(before: Date, limit: number): Promise<number> {
    return this.repository.deleteIdentities(before, limit);
  }
}
