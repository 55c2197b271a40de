import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { OutboxService } from '../outbox/outbox.service';
import { operationKeysOf } from './order-effects';
import { OrdersRepository } from './orders.repository';

/** Whose data: every order with this e-mail address (any tenant), or one order. */
export type ErasureSubject = { email: string } | { tenantId: string; orderId: string };

export interface ErasureResult {
  orders: { tenantId: string; orderId: string }[];
  outboxEntries: number;
  recipientsBlanked: number;
  payloadsPurged: number;
  /** The audit row of the first transaction (orders, outbox, payloads behind them). */
  auditId: string;
}

/** Stored payloads looked at per scan batch (each batch that matches is its own purge transaction). */
export const ERASURE_SCAN_BATCH = 1000;

/**
 * Erases one customer's personal data at an operator's request (audited, with a reason):
 * the e-mail address of their orders, the recipient of their e-mail operations, and the
 * inbox payloads that mention them. Identities, digests, statuses, amounts and ids stay,
 * so a resent event is still a duplicate and the business record stays consistent.
 *
 * First one transaction: lock the orders, blank the address, blank the outbox recipients
 * (an unsent e-mail becomes `dead`, 'erased'), purge the payloads of the events that
 * changed the orders, audit. Then a scan of the stored payloads (decrypted in memory, in
 * batches) for the address or the orders' ids, each batch that finds some purging them
 * in its own transaction with its own audit row. Running it again finds nothing more.
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

  async erase(subject: ErasureSubject, by: { actor: Actor; reason: string }): Promise<ErasureResult> {
    const target = 'email' in subject ? 'customer:by-email' : `order:${subject.tenantId}/${subject.orderId}`;
    const first = await this.dataSource.transaction(async (tx) => {
      const orders = await this.orders.lockForErasure(tx, subject);
      await this.orders.eraseCustomerEmail(tx, orders);
      const outbox = await this.outbox.eraseRecipients(tx, orders.flatMap((o) => operationKeysOf(o.tenantId, o.orderId)));
      const purged = await this.inbox.erasePayloads(tx, outbox.sourceEventIds);
      const details = {
        orders: orders.map((o) => `${o.tenantId}/${o.orderId}`),
        outboxEntries: outbox.entries,
        recipientsBlanked: outbox.blanked,
        payloadsPurged: purged,
      };
      // The address itself is never written to the audit log.
      const auditId = await this.audit.record(tx, by.actor, { action: 'customer.erase', target, reason: by.reason, details });
      return { orders, outbox, purged, auditId };
    });

    const scanned = await this.purgeMentions(subject, first.orders, target, by);
    const result: ErasureResult = {
      orders: first.orders,
      outboxEntries: first.outbox.entries,
      recipientsBlanked: first.outbox.blanked,
      payloadsPurged: first.purged + scanned,
      auditId: first.auditId,
    };
    this.logger.log({ actor: by.actor.name, target, orders: result.orders.length, payloadsPurged: result.payloadsPurged }, 'customer data erased');
    return result;
  }

  /** Purges the stored payloads that mention the address or, for the orders' tenants, one of their order ids. */
  private async purgeMentions(
    subject: ErasureSubject,
    orders: { tenantId: string; orderId: string }[],
    target: string,
    by: { actor: Actor; reason: string },
  ): Promise<number> {
    const email = 'email' in subject ? subject.email.toLowerCase() : undefined;
    const ids = new Map<string, Set<string>>();
    for (const o of [...orders, ...('email' in subject ? [] : [subject])]) {
      if (!ids.has(o.tenantId)) ids.set(o.tenantId, new Set());
      ids.get(o.tenantId)!.add(o.orderId);
    }
    const matches = (tenantId: string, json: string): boolean => {
      if (email !== undefined && json.toLowerCase().includes(email)) return true;
      const orderIds = ids.get(tenantId);
      return orderIds !== undefined && [...orderIds].some((id) => json.includes(id)) && orderIds.has(orderIdOf(json));
    };
    // By e-mail: every tenant's payloads may mention the address.
    const tenants = email !== undefined ? null : [...ids.keys()];
    let purged = 0;
    let batch = 0;
    for (let after = '0'; ; ) {
      const found = await this.inbox.payloadsMatching(matches, tenants, after, this.scanBatch);
      if (found.ids.length > 0) {
        batch++;
        purged += await this.dataSource.transaction(async (tx) => {
          const n = await this.inbox.erasePayloads(tx, found.ids);
          await this.audit.record(tx, by.actor, { action: 'customer.erase_payloads', target, reason: by.reason, details: { batch, ids: found.ids } });
          return n;
        });
      }
      if (found.lastId === null) return purged;
      after = found.lastId;
    }
  }
}

/** `data.object.metadata.order_id` of a Stripe-style payload ('' when absent or not JSON). */
function orderIdOf(json: string): string {
  try {
    const id = (JSON.parse(json) as any)?.data?.object?.metadata?.order_id;
    return typeof id === 'string' ? id : '';
  } catch {
    return '';
  }
}
