import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { afterCommit, transactionWithAfterCommit } from '../database/after-commit';
import { InboxService } from '../inbox/inbox.service';
import { InboxFilter, InboxStatusChange } from '../inbox/inbox.types';
import { AdminPrincipal } from './admin-auth';
import { AuditService } from '../audit/audit.service';

/** Rows per bulk-replay transaction: bounded lock time and WAL per commit. */
export const BULK_REPLAY_BATCH = 500;

/** Inbox repairs: each change and its audit row commit in one transaction. */
@Injectable()
export class AdminInboxService {
  private readonly logger = new Logger(AdminInboxService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly inbox: InboxService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
  ) {}

  replay(who: AdminPrincipal, id: string, reason: string): Promise<InboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const change = await this.inbox.replayInTx(tx, id, this.clock.now());
      const auditId = await this.audit.record(tx, who, {
        action: 'inbox.replay',
        target: `inbox:${id}`,
        reason,
        beforeStatus: change.before,
        afterStatus: change.after,
      });
      afterCommit(tx, () => this.inbox.wakeWorkers());
      this.logger.log({ inboxId: id, actor: who.name, before: change.before }, 'inbox event replayed');
      return { ...change, auditId };
    });
  }

  quarantine(who: AdminPrincipal, id: string, reason: string): Promise<InboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const change = await this.inbox.quarantineInTx(tx, id, this.clock.now());
      const auditId = await this.audit.record(tx, who, {
        action: 'inbox.quarantine',
        target: `inbox:${id}`,
        reason,
        beforeStatus: change.before,
        afterStatus: change.after,
      });
      this.logger.log({ inboxId: id, actor: who.name, before: change.before }, 'inbox event quarantined');
      return { ...change, auditId };
    });
  }

  /**
   * Replays every settled event matching `filter` that existed when the call began,
   * in batches of BULK_REPLAY_BATCH ids, each batch with its own audit row.
   * A dry run counts exactly what a real run would start with.
   */
  async bulkReplay(who: AdminPrincipal, filter: InboxFilter, dryRun: boolean, reason: string): Promise<{ count: number; dryRun: boolean; batches: number }> {
    if (dryRun) return { count: await this.inbox.countReplayable(filter), dryRun, batches: 0 };
    const maxId = await this.inbox.maxId();
    let afterId = '0';
    let count = 0;
    let batches = 0;
    for (;;) {
      const ids = await this.inbox.replayableIds(filter, afterId, maxId, BULK_REPLAY_BATCH);
      if (ids.length === 0) break;
      afterId = ids[ids.length - 1];
      const replayed = await transactionWithAfterCommit(this.dataSource, async (tx) => {
        const changes = await this.inbox.replayIdsInTx(tx, filter, ids, this.clock.now());
        if (changes.length > 0) {
          await this.audit.record(tx, who, {
            action: 'inbox.replay_bulk',
            target: 'inbox:filter',
            reason,
            afterStatus: 'pending',
            details: { filter: describeFilter(filter), batch: batches + 1, ids: changes.map((c) => c.id), before: countBy(changes) },
          });
          afterCommit(tx, () => this.inbox.wakeWorkers());
        }
        return changes.length;
      });
      count += replayed;
      batches += 1;
      if (ids.length < BULK_REPLAY_BATCH) break;
    }
    this.logger.log({ actor: who.name, count, batches }, 'bulk replay finished');
    return { count, dryRun, batches };
  }
}

function describeFilter(f: InboxFilter): Record<string, string> {
  return Object.fromEntries(
    Object.entries(f)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : String(v)]),
  );
}

function countBy(changes: InboxStatusChange[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of changes) out[c.before] = (out[c.before] ?? 0) + 1;
  return out;
}
