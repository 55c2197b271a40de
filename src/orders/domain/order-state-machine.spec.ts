import { decide, OrderFacts, OrderStatus, PaymentEventKind, PaymentFacts, StatusStep, transition } from './order-state-machine';

describe('transition', () => {
  const cases: [OrderStatus, PaymentEventKind, StatusStep][] = [
    ['awaiting_payment', 'payment_succeeded', { kind: 'move', to: 'paid' }],
    ['awaiting_payment', 'payment_failed', { kind: 'record_failure' }],
    ['awaiting_payment', 'payment_canceled', { kind: 'move', to: 'canceled' }],
    ['awaiting_payment', 'refunded', { kind: 'wait', reason: 'order_not_paid_yet' }],
    ['paid', 'payment_succeeded', { kind: 'already_applied' }],
    ['paid', 'payment_failed', { kind: 'stale' }],
    ['paid', 'payment_canceled', { kind: 'stale' }],
    ['paid', 'refunded', { kind: 'move', to: 'refunded' }],
    ['refunded', 'payment_succeeded', { kind: 'stale' }],
    ['refunded', 'payment_failed', { kind: 'stale' }],
    ['refunded', 'payment_canceled', { kind: 'stale' }],
    ['refunded', 'refunded', { kind: 'already_applied' }],
    ['canceled', 'payment_succeeded', { kind: 'conflict', reason: 'order_canceled' }],
    ['canceled', 'payment_failed', { kind: 'stale' }],
    ['canceled', 'payment_canceled', { kind: 'already_applied' }],
    ['canceled', 'refunded', { kind: 'stale' }],
  ];

  it.each(cases)('%s + %s', (status, kind, expected) => {
    expect(transition(status, kind)).toEqual(expected);
  });

  it('never moves an order back to an earlier status', () => {
    const rank: Record<OrderStatus, number> = { awaiting_payment: 0, paid: 1, canceled: 1, refunded: 2 };
    for (const [status, kind] of cases) {
      const step = transition(status, kind);
      if (step.kind === 'move') expect(rank[step.to]).toBeGreaterThan(rank[status]);
    }
  });
});

describe('decide', () => {
  const order = (o: Partial<OrderFacts> = {}): OrderFacts => ({
    status: 'awaiting_payment',
    providerPaymentId: null,
    totalMinor: 1000,
    currency: 'eur',
    ...o,
  });
  const event = (e: Partial<PaymentFacts> = {}): PaymentFacts => ({
    kind: 'payment_succeeded',
    paymentId: 'pi_1',
    amountMinor: 1000,
    currency: 'eur',
    ...e,
  });

  it('moves an awaiting order to paid when everything matches (unbound payment binds)', () => {
    expect(decide(order(), event())).toEqual({ kind: 'move', from: 'awaiting_payment', to: 'paid' });
    expect(decide(order({ providerPaymentId: 'pi_1' }), event())).toEqual({ kind: 'move', from: 'awaiting_payment', to: 'paid' });
  });

  it('compares currencies case-insensitively on the event side', () => {
    expect(decide(order(), event({ currency: 'EUR' })).kind).toBe('move');
  });

  it('quarantines an amount, currency or payment mismatch', () => {
    expect(decide(order(), event({ amountMinor: 999 }))).toEqual({ kind: 'quarantine', reason: 'amount_mismatch' });
    expect(decide(order(), event({ currency: 'usd' }))).toEqual({ kind: 'quarantine', reason: 'currency_mismatch' });
    expect(decide(order({ providerPaymentId: 'pi_other' }), event())).toEqual({ kind: 'quarantine', reason: 'payment_mismatch' });
  });

  it('accepts a duplicate of an applied change only if it matches', () => {
    const paid = order({ status: 'paid', providerPaymentId: 'pi_1' });
    expect(decide(paid, event())).toEqual({ kind: 'noop', reason: 'already_applied' });
    expect(decide(paid, event({ amountMinor: 5 }))).toEqual({ kind: 'quarantine', reason: 'amount_mismatch' });
    expect(decide(paid, event({ paymentId: 'pi_2' }))).toEqual({ kind: 'quarantine', reason: 'payment_mismatch' });
  });

  it('refunds a paid order in full; a partial or oversized refund is quarantined', () => {
    const paid = order({ status: 'paid', providerPaymentId: 'pi_1' });
    const refund = event({ kind: 'refunded', refundedMinor: 1000 });
    expect(decide(paid, refund)).toEqual({ kind: 'move', from: 'paid', to: 'refunded' });
    expect(decide(paid, { ...refund, refundedMinor: 400 })).toEqual({ kind: 'quarantine', reason: 'partial_refund' });
    expect(decide(paid, { ...refund, refundedMinor: 4000 })).toEqual({ kind: 'quarantine', reason: 'amount_mismatch' });
  });

  it('makes a refund that overtakes its payment wait', () => {
    expect(decide(order(), event({ kind: 'refunded', refundedMinor: 1000 }))).toEqual({ kind: 'wait', reason: 'order_not_paid_yet' });
  });

  it('ignores a late success on a refunded order whatever it carries', () => {
    const refunded = order({ status: 'refunded', providerPaymentId: 'pi_1' });
    expect(decide(refunded, event())).toEqual({ kind: 'noop', reason: 'stale' });
    expect(decide(refunded, event({ amountMinor: 1 }))).toEqual({ kind: 'noop', reason: 'stale' });
  });

  it('records a failure of the bound (or a not yet bound) payment only', () => {
    expect(decide(order(), event({ kind: 'payment_failed' }))).toEqual({ kind: 'record_failure' });
    expect(decide(order({ providerPaymentId: 'pi_9' }), event({ kind: 'payment_failed' }))).toEqual({ kind: 'noop', reason: 'stale' });
  });

  it('cancels an awaiting order; a success on a canceled order is quarantined', () => {
    expect(decide(order(), event({ kind: 'payment_canceled' }))).toEqual({ kind: 'move', from: 'awaiting_payment', to: 'canceled' });
    expect(decide(order({ status: 'canceled', providerPaymentId: 'pi_1' }), event())).toEqual({
      kind: 'quarantine',
      reason: 'order_canceled',
    });
  });
});
