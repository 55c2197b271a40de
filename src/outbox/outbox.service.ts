import { Injectable } from '@nestjs/common';
import { OutboxRepository } from './outbox.repository';
import { UnitOfWork } from '../database/unit-of-work';

/** The outbox as retention and an erasure see it (the writer is OutboxWriter; operators use OutboxAdminService). */
@Injectable()
export class OutboxService {
  constructor(private readonly repository: OutboxRepository) {}

  /** Retention (maintenance role): one bounded batch of delivered entries older than `before`. */
  pruneDelivered(before: Date, limit: number): Promise<number> {
    return this.repository.pruneDelivered(before, limit);
  }

  /** Retention: one bounded batch of dead and unresolved entries older than `before` that hold nothing back. */
  pruneAbandoned(before: Date, limit: number): Promise<number> {
    return this.repository.pruneAbandoned(before, limit);
  }

  /**
   * Erasure, in the caller's transaction: blanks the e-mail recipient of the entries
   * with these operation keys (an unsent one becomes `dead`, 'erased'); returns how
   * many entries there were and the inbox events they came from.
   */
  eraseRecipients(tx: UnitOfWork, operationKeys: string[]): Promise<{ entries: number; blanked: number; sourceEventIds: string[] }> {
    return this.repository.eraseRecipients(tx, operationKeys);
  }
}
