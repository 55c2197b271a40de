import { Injectable, Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { BadRequestError, ConflictError, NotFoundError, TransientError } from '../common/errors';
import { HandlerOutcome } from '../inbox/inbox.types';
import { OutboxWriter } from '../outbox/outbox-writer';
import { decide, PaymentFacts } from './domain/order-state-machine';
import { effectsOf } from './order-effects';
import { OrdersRepository } from './orders.repository';
import { CreateOrder, Order } from './orders.types';

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
    private readonly repository: OrdersRepository,
    private readonly outbox: OutboxWriter,
  ) {}

  /**
   * Creates an `awaiting_payment` order; 409 if the id is taken for the tenant.
   * With `tx` it joins the caller's transaction (the admin API audits in it).
   */
  async create(input: CreateOrder, tx?: EntityManager): Promise<Order> {
    const order = validate(input);
    let created: Order | undefined;
    try {
      created = await this.repository.insert(order, tx);
    } catch (error) {
      if ((error as { code?: string })?.code === '23505') throw new ConflictError('payment_already_bound', 'the payment id belongs to another order');
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

  /**
   * Applies one payment event in the caller's transaction: locks the order,
   * decides, transitions with a conditional UPDATE and writes the outbox entries.
   * An unknown order, or a refund ahead of its payment, is a TransientError.
   */
  async applyPayment(tx: EntityManager, e: PaymentEvent): Promise<HandlerOutcome> {
    const log = { tenantId: e.tenantId, orderId: e.orderId, paymentId: e.facts.paymentId, sourceEventId: e.sourceEventId };
    const order = await this.repository.lock(tx, e.tenantId, e.orderId);
    // It may be created a moment later (the checkout races the webhook): retry, quarantine at the limit.
    if (!order) throw new TransientError('order_not_found');
    const decision = decide(order, e.facts);
    switch (decision.kind) {
      case 'noop':
        this.logger.log({ ...log, status: order.status, reason: decision.reason }, 'payment event changes nothing');
        return { kind: 'done' };
      case 'wait':
        throw new TransientError(decision.reason);
      case 'quarantine':
        return { kind: 'quarantine', reason: decision.reason };
      case 'record_failure':
        await this.repository.recordPaymentError(tx, e.tenantId, e.orderId, e.failure ?? 'payment_failed');
        this.logger.log(log, 'payment failure recorded');
        return { kind: 'done' };
      case 'move': {
        const moved = await this.repository.transition(tx, {
          tenantId: e.tenantId,
          orderId: e.orderId,
          paymentId: e.facts.paymentId,
          amountMinor: e.facts.amountMinor,
          currency: e.facts.currency.toLowerCase(),
          from: decision.from,
          to: decision.to,
        });
        // The row is locked and was just checked, so this means a bug or a concurrent
        // writer outside the lock: roll back and retry rather than guess.
        if (!moved) throw new TransientError('order_changed_concurrently');
        const written = await this.outbox.write(
          tx,
          effectsOf(moved, decision.to, { paymentId: e.facts.paymentId, occurredAt: e.occurredAt, sourceEventId: e.sourceEventId }),
        );
        this.logger.log({ ...log, from: decision.from, to: decision.to, operationKeys: written }, 'order transitioned');
        return { kind: 'done' };
      }
    }
  }
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
