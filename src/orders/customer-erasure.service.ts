import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { PayloadErasure, PayloadEraser, UnreadablePayload } from '../inbox/inbox.types';
import { OutboxService } from '../outbox/outbox.service';
import { CustomerMentions } from './customer-mentions';
import { operationKeysOf } from './order-effects';
import { OrdersRepository } from './orders.repository';
import { runInTransaction } from '../database/unit-of-work';

/** Whose data: every order with this e-mail address (any tenant), or one order. */
export type ErasureSubject = { email: string } | { tenantId: string; orderId: string };

export interface ErasureResult {
  /** True: nothing was changed; the counts say what would be. */
  dryRun: boolean;
  orders: { tenantId: string; orderId: string }[];
  outboxEntries: number;
  recipientsBlanked: number;
  /** Settled events (done, ignored) whose payload was removed. */
  payloadsPurged: number;
  /** Open events (pending, processing, quarantined) whose payload had the address replaced and was kept for their work. */
  payloadsRedacted: number;
  /** Payloads this instance could not check (a key it lacks, a broken seal, a payload it cannot walk): run again once they open. */
  unreadable: UnreadablePayload[];
  /** No stored payload was left unchecked. */
  complete: boolean;
  /** The audit row of the first transaction (of the dry run's record for a dry run). */
  auditId: string;
}

/** Stored payloads looked at per scan batch (each batch that matches is its own transaction). */
export const ERASURE_SCAN_BATCH = 1000;

/** Unwinds a dry run's first transaction with what it would have done. */
class DryRunRollback extends Error {
  constructor(readonly outcome: FirstStep) {
    super('dry run: rolled back');
  }
}

interface FirstStep {
  orders: { tenantId: string; orderId: string }[];
  outbox: { entries: number; blanked: number };
  payloads: PayloadErasure;
  eraser: PayloadEraser;
  auditId: string;
}

/**
 * Erases one customer's personal data at an operator's request (audited, with a reason):
 * the e-mail address of their orders, the recipient of their e-mail operations, and the
 * inbox payloads that mention them. Identities, digests, statuses, amounts and ids stay,
 * so a resent event is still a duplicate and the business record stays consistent.
 *
 * A payload mentions the customer when one of its values is the address (whole, case
 * aside) or, for a settled event, when it is the event of one of their orders. Settled
 * events lose their payload; open ones (pending, processing, quarantined) keep it with
 * the address replaced by '', so their payment still applies: an erasure never turns
 * work into a `payload_missing` quarantine.
 *
 * First one transaction: lock the orders, blank the address, blank the outbox recipients
 * (an unsent e-mail becomes `dead`, 'erased'), erase the payloads of the events that
 * changed the orders, audit. Then a scan of the stored payloads (decrypted in memory, in
 * batches), each batch that finds some erasing them in its own transaction with its own
 * audit row. Payloads it cannot open are reported, and running it again once they open
 * completes it. A dry run does the same reads, rolls the first transaction back, changes
 * nothing and audits that it ran.
 */
@Injectable()
export class CustomerErasureService {
  private readonly logger = new Logger(CustomerErasureService.name);
  /** Overridable by tests. */
  scanBatch = ERASURE_SCAN_BATCH;

  constructor(
    private readonly dataSource: DataSource,
    private readonly orders: OrdersRepository,
    private readonly outbox: OutboxService,
    private readonly inbox: InboxAdminService,
    private readonly audit: AuditService,
  ) {}

  async erase(subject: ErasureSubject, by: { actor: Actor; reason: string }, dryRun = false): Promise<ErasureResult> {
    const target = 'email' in subject ? 'customer:by-email' : `order:${subject.tenantId}/${subject.orderId}`;
    const first = await this.eraseOrders(subject, target, by, dryRun);
    const tenants = 'email' in subject ? null : [subject.tenantId];
    const scanned = await this.eraseMentions(first.eraser, tenants, target, by, dryRun);

    const purged = new Set([...first.payloads.purged, ...scanned.purged]);
    const redacted = new Set([...first.payloads.redacted, ...scanned.redacted]);
    const unreadable = uniqueById([...first.payloads.unreadable, ...scanned.unreadable]);
    const counts = { payloadsPurged: purged.size, payloadsRedacted: redacted.size, unreadable: unreadable.length };
    let auditId = first.auditId;
    if (dryRun || unreadable.length > 0) {
      // Key ids and row ids only: what an operator needs to finish it later.
      const recorded = await runInTransaction(this.dataSource, (tx) =>
        this.audit.record(tx, by.actor, {
          action: dryRun ? 'customer.erase_dry_run' : 'customer.erase_incomplete',
          target,
          reason: by.reason,
          details: { orders: first.orders.map((o) => `${o.tenantId}/${o.orderId}`), ...counts, unreadable: unreadable.slice(0, 1000) },
        }),
      );
      if (dryRun) auditId = recorded;
    }
    const result: ErasureResult = {
      dryRun,
      orders: first.orders,
      outboxEntries: first.outbox.entries,
      recipientsBlanked: first.outbox.blanked,
      payloadsPurged: purged.size,
      payloadsRedacted: redacted.size,
      unreadable,
      complete: unreadable.length === 0,
      auditId,
    };
    this.logger.log({ actor: by.actor.name, target, dryRun, orders: result.orders.length, ...counts }, 'customer data erased');
    return result;
  }

  /** The first transaction; a dry run's is rolled back and answers what it did before that. */
  private async eraseOrders(
    subject: ErasureSubject,
    target: string,
    by: { actor: Actor; reason: string },
    dryRun: boolean,
  ): Promise<FirstStep> {
    try {
      return await runInTransaction(this.dataSource, async (tx): Promise<FirstStep> => {
        const orders = await this.orders.lockForErasure(tx, subject);
        const eraser = customerEraser(subject, orders);
        await this.orders.eraseCustomerEmail(tx, orders);
        const outbox = await this.outbox.eraseRecipients(
          tx,
          orders.flatMap((o) => operationKeysOf(o.tenantId, o.orderId)),
        );
        const payloads = await this.inbox.erasePayloads(tx, outbox.sourceEventIds, eraser);
        const keys = orders.map(({ tenantId, orderId }) => ({ tenantId, orderId }));
        const step = { orders: keys, outbox, payloads, eraser, auditId: '' };
        if (dryRun) throw new DryRunRollback(step);
        const details = {
          orders: keys.map((o) => `${o.tenantId}/${o.orderId}`),
          outboxEntries: outbox.entries,
          recipientsBlanked: outbox.blanked,
          payloadsPurged: payloads.purged.length,
          payloadsRedacted: payloads.redacted.length,
        };
        // The address itself is never written to the audit log.
        step.auditId = await this.audit.record(tx, by.actor, { action: 'customer.erase', target, reason: by.reason, details });
        return step;
      });
    } catch (error) {
      if (error instanceof DryRunRollback) return error.outcome;
      throw error;
    }
  }

  /** Scans the stored payloads (of `tenants`, or all) for the customer; erases each batch's matches in its own transaction. */
  private async eraseMentions(
    eraser: PayloadEraser,
    tenants: string[] | null,
    target: string,
    by: { actor: Actor; reason: string },
    dryRun: boolean,
  ): Promise<PayloadErasure> {
    const total: PayloadErasure = { purged: [], redacted: [], unreadable: [] };
    let batch = 0;
    for (let after = '0'; ;) {
      const found = await this.inbox.scanForErasure(eraser, tenants, after, this.scanBatch);
      total.unreadable.push(...found.unreadable);
      if (dryRun) {
        for (const m of found.matched) (m.settled ? total.purged : total.redacted).push(m.id);
      } else if (found.matched.length > 0) {
        batch++;
        const done = await runInTransaction(this.dataSource, async (tx) => {
          const erased = await this.inbox.erasePayloads(
            tx,
            found.matched.map((m) => m.id),
            eraser,
          );
          const details = { batch, purged: erased.purged, redacted: erased.redacted };
          await this.audit.record(tx, by.actor, { action: 'customer.erase_payloads', target, reason: by.reason, details });
          return erased;
        });
        total.purged.push(...done.purged);
        total.redacted.push(...done.redacted);
        total.unreadable.push(...done.unreadable);
      }
      if (found.lastId === null) return total;
      after = found.lastId;
    }
  }
}

/**
 * The customer's data in a payload: their addresses (the one asked for, and the
 * orders' own) as whole values, and their orders as the event's order.
 */
function customerEraser(subject: ErasureSubject, orders: { tenantId: string; orderId: string; customerEmail: string }[]): PayloadEraser {
  const ids = new Map<string, Set<string>>();
  for (const o of [...orders, ...('email' in subject ? [] : [subject])]) {
    if (!ids.has(o.tenantId)) ids.set(o.tenantId, new Set());
    ids.get(o.tenantId)!.add(o.orderId);
  }
  const addresses = [...('email' in subject ? [subject.email] : []), ...orders.map((o) => o.customerEmail)];
  const mentions = new CustomerMentions(addresses, ids);
  return {
    // An open event is changed only where redaction changes it: its address.
    matches: ({ tenantId, settled, payload }) => (settled && mentions.namesOrder(tenantId, payload)) || mentions.holdsAddress(payload),
    redact: (payload) => mentions.redact(payload),
  };
}

function uniqueById(rows: UnreadablePayload[]): UnreadablePayload[] {
  return [...new Map(rows.map((r) => [r.id, r])).values()];
}
