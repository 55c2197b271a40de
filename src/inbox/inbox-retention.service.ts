import { Injectable } from '@nestjs/common';
import { InboxRepository } from './inbox.repository';

/** The inbox's part of the retention job (maintenance role): one bounded batch per call. */
@Injectable()
export class InboxRetentionService {
  constructor(private readonly repository: InboxRepository) {}

  /** Drops payloads of done/ignored events received before `before` (identity, digest, status kept). */
  purgePayloads(before: Date, limit: number): Promise<number> {
    return this.repository.purgePayloads(before, limit);
  }

  /** Deletes done/ignored events received before `before`: a resend after this is accepted as new. */
  deleteIdentities(before: Date, limit: number): Promise<number> {
    return this.repository.deleteIdentities(before, limit);
  }

  /** Deletes events quarantined and received before `before`, with their attempts: the operator's window has passed. */
  deleteAbandoned(before: Date, limit: number): Promise<number> {
    return this.repository.deleteAbandoned(before, limit);
  }
}
