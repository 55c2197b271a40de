import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { afterCommit, transactionWithAfterCommit } from '../database/after-commit';
import { OutboxService, OutboxStatusChange } from '../outbox/outbox.service';
import { AdminPrincipal } from './admin-auth';
import { AuditService } from '../audit/audit.service';

/** Outbox repairs: each change and its audit row commit in one transaction. */
@Injectable()
export class AdminOutboxService {
  private readonly logger = new Logger(AdminOutboxService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly outbox: OutboxService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
  ) {}

  retry(who: AdminPrincipal, id: string, reason: string): Promise<OutboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const change = await this.outbox.retryInTx(tx, id, this.clock.now());
      const auditId = await this.audit.record(tx, who, {
        action: 'outbox.retry',
        target: `outbox:${id}`,
        reason,
        beforeStatus: change.before,
        afterStatus: change.after,
      });
      afterCommit(tx, () => this.outbox.wakeRelays());
      this.logger.log({ outboxId: id, actor: who.name, before: change.before }, 'outbox entry re-queued');
      return { ...change, auditId };
    });
  }

  resolve(who: AdminPrincipal, id: string, outcome: 'delivered' | 'retry', reason: string): Promise<OutboxStatusChange & { auditId: string }> {
    return transactionWithAfterCommit(this.dataSource, async (tx) => {
      const change = await this.outbox.resolveInTx(tx, id, outcome, this.clock.now());
      const auditId = await this.audit.record(tx, who, {
        action: 'outbox.resolve',
        target: `outbox:${id}`,
        reason,
        beforeStatus: change.before,
        afterStatus: change.after,
        details: { outcome },
      });
      if (outcome === 'retry') afterCommit(tx, () => this.outbox.wakeRelays());
      this.logger.log({ outboxId: id, actor: who.name, outcome }, 'unresolved outbox entry resolved');
      return { ...change, auditId };
    });
  }
}
