import { Injectable } from '@nestjs/common';
import { InboxRepository } from './inbox.repository';
import { AcceptRequest, AcceptResult } from './inbox.types';

@Injectable()
export class InboxService {
  constructor(private readonly repository: InboxRepository) {}

  /**
   * Claims the event identity atomically and commits it as pending work.
   * Resolves only after the commit; rejects if the outcome is not known to be committed.
   */
  accept(request: AcceptRequest): Promise<AcceptResult> {
    return this.repository.accept(request);
  }
}
