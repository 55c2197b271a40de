import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { BadRequestError, ConflictError, NotFoundError, TransientError, WaitingError } from '../common/errors';
import { HandlerOutcome } from '../inbox/inbox.types';
import { OutboxWrite, OutboxWriter } from '../outbox/outbox-writer';
import { isUniqueViolation } from '../common/database-errors';
import { decide, PaymentFacts } from './domain/order-state-machine';
import { effectsOf } from './order-effects';
import { OrderTransition, orderKey, OrdersRepository, TransitionRequest, TransitionStep } from './orders.repository';
import { CreateOrder, Order } from './orders.types';
import { runInTransaction, UnitOfWork } from '../database/unit-of-work';

export interface PaymentEvent {
  tenantId: string;
  orderId: string;
  facts: PaymentFacts;
  /** ISO time of the provider event. */
  occurredAt: string;
  /** The inbox row id. */
  sourceEventId: string;
  /** Short failure description for `payment_failed`. */
  failure?: string;
}

const ID = /^[\x21-\x7e]{1,255}$/;

@Injectable()
export class OrdersService {
  private readonly logger = new Logger(OrdersService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: OrdersRepository,
    private readonly outbox: OutboxWriter,
    private readonly audit: AuditService,
  ) {}

  /**
   * Creates an `awaiting_payment` order; 409 if the id is taken for the tenant.
   * `by` an operator: the order and its audit row commit in one transaction.
   */
  async create(input: CreateOrder, by?: { actor: Actor; reason?: string }): Promise<Order> {
    const order = validate(input);
    let created: Order | undefined;
    try {
      created = await runInTransaction(this.dataSource, async (tx) => {
        const inserted = await this.repository.insert(order, tx);
        if (inserted && by) {
          await this.audit.record(tx, by.actor, {
            action: 'order.create',
            target: `order:${inserted.tenantId}/${inserted.id}`,
            reason: by.reason ?? 'order created',
            afterStatus: inserted.status,
            details: { totalMinor: inserted.totalMinor, currency: inserted.currency },
          });
        }
        return inserted;
      });
    } catch (error) {
      if (isUniqueViolation(error, 'orders_payment'))
        throw new ConflictError('payment_already_bound', 'the payment id belongs to another order');
      throw error;
    }
    if (!created) throw new ConflictError('order_exists', 'an order with this id already exists');
    this.logger.log({ tenantId: created.tenantId, orderId: created.id }, 'order created');
    return created;
  }

  /** 404 `order_not_found` when absent. */
  async get(tenantId: string, id: string): Promise<Order> {
    const order = await this.repository.find(tenantId, id);
    if (!order) throw new NotFoundError('order_not_found', 'no such order');
    return order;
  }

  /** The order transitions an inbox event caused (normally none or one). */
  /** Retention (RETENTION_ORDER_DAYS): one batch of orders created and last changed before `before`, with their transitions. */
  prune(before: Date, limit: number): Promise<number> {
    return this.repository.prune(before, limit);
  }

  transitionsOfEvent(inboxId: string): Promise<OrderTransition[]> {
    return this.repository.transitionsOfEvent(inboxId);
  }

  /** The transitions transaction `tx` itself wrote for inbox event `inboxId` (the effect preview reads them before its rollback). */
  transitionsWrittenIn(tx: UnitOfWork, inboxId: string): Promise<OrderTransition[]> {
    return this.repository.transitionsOfEvent(inboxId, tx);
  }

  /**
   * Applies payment events in the caller's transaction with the same result as
   * applying them one at a time, in order, but in a few set-based statements:
   * lock every order, decide each event in memory against the order as the
   * events before it left it, then write all transitions, payment errors and
   * outbox entries at once. Per event: an outcome, or the error it stands for
   * (an unknown order or a refund ahead of its payment is a TransientError).
   * The writes are sent without waiting for their answers: they leave with the
   * worker's completion and COMMIT in one round trip, and a failure among them
   * fails the transaction (UnitOfWork.send).
   */
  async applyPayments(tx: UnitOfWork, events: PaymentEvent[]): Promise<(HandlerOutcome | Error)[]> {
    const orders = await this.repository.lockMany(tx, events);
    const transitions = new Map<string, TransitionRequest>();
    const steps: TransitionStep[] = [];
    const paymentErrors = new Map<string, { tenantId: string; orderId: string; error: string }>();
    const effects: OutboxWrite[] = [];
    const results = events.map((e): HandlerOutcome | Error => {
      const key = orderKey(e.tenantId, e.orderId);
      const order = orders.get(key);
      // It may be created a moment later (the checkout races the webhook): retry, quarantine at the limit.
      if (!order) return new TransientError('order_not_found');
      const decision = decide(order, e.facts);
      switch (decision.kind) {
        case 'noop':
          this.logger.log(logFields(e, { status: order.status, reason: decision.reason }), 'payment event changes nothing');
          return { kind: 'done' };
        case 'wait':
          return new WaitingError(decision.reason);
        case 'quarantine':
          return { kind: 'quarantine', reason: decision.reason };
        case 'record_failure': {
          const error = e.failure ?? 'payment_failed';
          paymentErrors.set(key, { tenantId: e.tenantId, orderId: e.orderId, error });
          orders.set(key, { ...order, lastPaymentError: error });
          this.logger.log(logFields(e), 'payment failure recorded');
          return { kind: 'done' };
        }
        case 'move': {
          const moved = { ...order, status: decision.to, providerPaymentId: order.providerPaymentId ?? e.facts.paymentId };
          orders.set(key, moved);
          // One UPDATE per order, from the status it had when locked to where its last event leaves it.
          const from = transitions.get(key)?.from ?? decision.from;
          const { paymentId, amountMinor } = e.facts;
          transitions.set(key, {
            tenantId: e.tenantId,
            orderId: e.orderId,
            paymentId,
            amountMinor,
            currency: order.currency,
            from,
            to: decision.to,
          });
          steps.push({ tenantId: e.tenantId, orderId: e.orderId, inboxId: e.sourceEventId, from: decision.from, to: decision.to });
          const entries = effectsOf(moved, decision.to, { paymentId, occurredAt: e.occurredAt, sourceEventId: e.sourceEventId });
          effects.push(...entries);
          this.logger.log(
            logFields(e, { from: decision.from, to: decision.to, operationKeys: entries.map((x) => x.operationKey) }),
            'order transitioned',
          );
          return { kind: 'done' };
        }
      }
    });

    // Errors first: their condition (still awaiting payment) holds for the orders as locked.
    if (paymentErrors.size > 0) this.repository.recordPaymentErrors(tx, [...paymentErrors.values()]);
    if (transitions.size > 0) this.repository.transitionMany(tx, [...transitions.values()], steps);
    void this.outbox.write(tx, effects);
    return results;
  }
}

/** One Object.assign per log line: a spread followed by more keys costs more, once per event. */
function logFields(e: PaymentEvent, more: object = {}): object {
  return Object.assign({ tenantId: e.tenantId, orderId: e.orderId, paymentId: e.facts.paymentId, sourceEventId: e.sourceEventId }, more);
}

function validate(o: CreateOrder): CreateOrder {
  if (typeof o.tenantId !== 'string' || !ID.test(o.tenantId)) throw new BadRequestError('invalid_tenant_id');
  if (typeof o.id !== 'string' || !ID.test(o.id)) throw new BadRequestError('invalid_order_id');
  if (!Number.isSafeInteger(o.totalMinor) || o.totalMinor < 0) throw new BadRequestError('invalid_total_minor');
  if (typeof o.currency !== 'string' || !/^[a-zA-Z]{3}$/.test(o.currency)) throw new BadRequestError('invalid_currency');
  if (typeof o.customerEmail !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(o.customerEmail) || o.customerEmail.length > 320) {
    throw new BadRequestError('invalid_customer_email');
  }
  const pay = o.providerPaymentId;
  if (pay !== undefined && pay !== null && (typeof pay !== 'string' || !ID.test(pay))) {
    throw new BadRequestError('invalid_provider_payment_id');
  }
  return { ...o, currency: o.currency.toLowerCase(), providerPaymentId: pay ?? null };
}
