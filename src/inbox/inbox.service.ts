import { Injectable } from '@nestjs/common';
import { PgNotifications } from '../database/pg-notifications';
import { InboxRepository } from './inbox.repository';
import { INBOX_CHANNEL } from './inbox-worker.scheduler';
import { AcceptRequest, AcceptResult } from './inbox.types';

@Injectable()
export class InboxService {
  constructor(
    private readonly repository: InboxRepository,
    private readonly notifications: PgNotifications,
  ) {}

  /**
   * Claims the event identity atomically and commits it as pending work.
   * Resolves only after the commit; rejects if the outcome is not known to be committed.
   */
  async accept(request: AcceptRequest): Promise<AcceptResult> {
    const result = await this.repository.accept(request);
    // Wake a worker now rather than at the next poll (throttled, best effort).
    if (result.outcome === 'accepted' && result.status === 'pending') this.notifications.notify(INBOX_CHANNEL);
    return result;
  }
}
