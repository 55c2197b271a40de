import { Injectable } from '@nestjs/common';
import { OutboxRepository } from './outbox.repository';

/** The outbox as retention sees it (the writer is OutboxWriter; operators use OutboxAdminService). */
@Injectable()
export class OutboxService {
  constructor(private readonly repository: OutboxRepository) {}

  /** Retention (maintenance role): one bounded batch of delivered entries older than `before`. */
  pruneDelivered(before: Date, limit: number): Promise<number> {
    return this.repository.pruneDelivered(before, limit);
  }
}
