import { Injectable } from '@nestjs/common';
import { InboxRepository } from './inbox.repository';
import { dayOf, ForgottenDays, PayloadDays } from './payload-days';

/** The inbox's part of the retention job (maintenance role): one bounded batch per call. */
@Injectable()
export class InboxRetentionService {
  constructor(
    private readonly repository: InboxRepository,
    private readonly days: PayloadDays,
  ) {}

  /**
   * Drops payloads of done/ignored events received before `before` (identity, digest, status
   * kept), row by row: legacy rows (stored before payloads moved to days), and days the
   * database has not reached yet (an application clock ahead of it). Days are forgotten whole
   * by forgetPayloadDays.
   */
  async purgePayloads(before: Date, limit: number): Promise<number> {
    const legacy = await this.repository.purgePayloads(before, limit);
    if (legacy >= limit) return legacy;
    return legacy + (await this.days.purgeUndroppable(dayOf(before), limit - legacy));
  }

  /**
   * Makes the days ahead, puts back rows an older instance quarantined for a payload it could
   * not see, and forgets the days of payloads wholly before `before` (undefined: payloads
   * kept for ever; open rows keep theirs, carried to today in batches of `batch`).
   */
  async forgetPayloadDays(before: Date | undefined, batch: number, stopped: () => boolean): Promise<ForgottenDays & { requeued: number }> {
    await this.days.makeAhead();
    const requeued = await this.days.requeueOldQuarantines();
    // Undefined: no day is forgotten, but one an earlier run detached is still finished.
    const forgotten = await this.days.forgetBefore(before && dayOf(before), batch, stopped);
    return { ...forgotten, requeued };
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
