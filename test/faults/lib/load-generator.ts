import { signRequest, SignedRequest } from '../../../src/cli/sign-request';
import { HttpResult, send, sleep } from './http';
import { ServiceInstance } from './service-fleet';

export const TENANT = 'acme';
export const ENDPOINT = 'stripe-acme';
export const SCOPE = 'acme:stripe:platform:test';

export type Scenario = 'pay' | 'pay-refund' | 'refund-first' | 'two-events' | 'two-events-late-success' | 'concurrent-pair';
const SCENARIOS: [Scenario, number][] = [
  ['pay', 0.3],
  ['pay-refund', 0.2],
  ['refund-first', 0.15],
  ['two-events', 0.15],
  ['two-events-late-success', 0.1],
  ['concurrent-pair', 0.1],
];

export interface PlannedOrder {
  id: string;
  paymentId: string;
  amount: number;
  currency: string;
  email: string;
  scenario: Scenario;
  /** Event types acknowledged with 200 / sent at least once. */
  acked: Set<string>;
  sent: Set<string>;
  created: boolean;
}

export interface LoadStats {
  requests: number;
  acked: number;
  accepted: number;
  duplicatesAbsorbed: number;
  exactDuplicatesSent: number;
  freshSignatureRetries: number;
  failedAttempts: number;
  byStatus: Record<string, number>;
  /** Answers no valid request may get (4xx on a valid event, `accepted` for an acknowledged id, ...). */
  violations: string[];
}

export interface LoadOptions {
  runId: string;
  secret: string;
  operatorToken: string;
  payloadMarker: string;
  piiMarker: string;
  random: () => number;
}

/**
 * Signed Stripe events through the real HTTP path, as Stripe sends them: an
 * order is created first (admin API), then its payment events; every event is
 * retried with a fresh signature until it is acknowledged with 200, and some
 * are sent again (exact copy or fresh signature) after their acknowledgement.
 */
export class LoadGenerator {
  readonly orders: PlannedOrder[] = [];
  /** Event ids acknowledged with 200. */
  readonly ackedEventIds = new Set<string>();
  /** [startedAt, endedAt] of every 200 on a webhook, to check none happened while the database was down. */
  readonly ackTimes: [number, number][] = [];
  /** Hex of every v1 signature sent (the log scan looks for them). */
  readonly signatures = new Set<string>();
  readonly stats: LoadStats = {
    requests: 0,
    acked: 0,
    accepted: 0,
    duplicatesAbsorbed: 0,
    exactDuplicatesSent: 0,
    freshSignatureRetries: 0,
    failedAttempts: 0,
    byStatus: {},
    violations: [],
  };
  private seq = 0;

  constructor(
    private readonly instances: ServiceInstance[],
    private readonly o: LoadOptions,
  ) {}

  /** Runs `concurrency` order flows until `stop()` says so; in-flight flows finish. */
  async run(concurrency: number, stop: () => boolean): Promise<void> {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (!stop()) await this.orderFlow(this.planOrder());
      }),
    );
  }

  private planOrder(): PlannedOrder {
    const n = ++this.seq;
    let r = this.o.random();
    let scenario: Scenario = 'pay';
    for (const [s, w] of SCENARIOS) {
      if (r < w) {
        scenario = s;
        break;
      }
      r -= w;
    }
    const order: PlannedOrder = {
      id: `ord-${this.o.runId}-${n}`,
      paymentId: `pi_${this.o.runId}_${n}`,
      amount: 100 + Math.floor(this.o.random() * 100_000),
      currency: this.o.random() < 0.8 ? 'eur' : 'usd',
      email: `c${n}.${this.o.piiMarker}@example.com`,
      scenario,
      acked: new Set(),
      sent: new Set(),
      created: false,
    };
    this.orders.push(order);
    return order;
  }

  private async orderFlow(order: PlannedOrder): Promise<void> {
    if (!(await this.createOrder(order))) return;
    const success = () => this.event(order, 'payment_intent.succeeded');
    const refund = () => this.event(order, 'charge.refunded');
    const pause = () => sleep(Math.floor(this.o.random() * 150));
    switch (order.scenario) {
      case 'pay':
        await this.deliver(order, success());
        return;
      case 'pay-refund':
        await this.deliver(order, success());
        await pause();
        await this.deliver(order, refund());
        return;
      case 'refund-first':
        await this.deliver(order, refund());
        await pause();
        await this.deliver(order, success());
        return;
      case 'two-events':
        // Two distinct event ids for the same payment: one business effect.
        await Promise.all([this.deliver(order, success()), this.deliver(order, success())]);
        return;
      case 'two-events-late-success': {
        const late = success();
        await this.deliver(order, success());
        await pause();
        await this.deliver(order, refund());
        await pause();
        await this.deliver(order, late); // must not move the refunded order back to paid
        return;
      }
      case 'concurrent-pair':
        await Promise.all([this.deliver(order, refund()), this.deliver(order, success())]);
        return;
    }
  }

  private event(order: PlannedOrder, type: string): { id: string; type: string; body: string } {
    const id = `evt_${this.o.runId}_${++this.seq}`;
    const created = Math.floor(Date.now() / 1000);
    const object =
      type === 'charge.refunded'
        ? {
            id: `ch_${order.paymentId}`,
            object: 'charge',
            amount: order.amount,
            amount_refunded: order.amount,
            currency: order.currency,
            payment_intent: order.paymentId,
            metadata: { order_id: order.id },
            description: this.o.payloadMarker,
            billing_details: { email: order.email },
          }
        : {
            id: order.paymentId,
            object: 'payment_intent',
            amount: order.amount,
            amount_received: order.amount,
            currency: order.currency,
            metadata: { order_id: order.id },
            description: this.o.payloadMarker,
            receipt_email: order.email,
          };
    const body = JSON.stringify({ id, object: 'event', api_version: '2026-10-28', created, livemode: false, type, data: { object } });
    return { id, type, body };
  }

  private target(): ServiceInstance {
    const up = this.instances.filter((i) => i.up);
    const pool = up.length ? up : this.instances;
    return pool[Math.floor(this.o.random() * pool.length)];
  }

  private async createOrder(order: PlannedOrder): Promise<boolean> {
    const body = JSON.stringify({
      tenantId: TENANT,
      id: order.id,
      totalMinor: order.amount,
      currency: order.currency,
      customerEmail: order.email,
    });
    const deadline = Date.now() + 120_000;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const res = await send(`${this.target().url}/admin/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.o.operatorToken}`, 'content-type': 'application/json' },
        body,
      });
      this.count(`admin ${res.status || res.error}`);
      // 409 order_exists: an earlier attempt committed but its answer was lost.
      if (res.status === 201 || res.status === 200 || (res.status === 409 && res.json?.reason === 'order_exists')) {
        order.created = true;
        return true;
      }
      if (res.status !== 0 && res.status < 500) {
        this.stats.violations.push(`create order ${order.id}: ${res.status} ${res.json?.reason}`);
        return false;
      }
      await sleep(Math.min(2_000, 100 * 2 ** attempt));
    }
    this.stats.violations.push(`create order ${order.id}: no answer before the deadline`);
    return false;
  }

  /** Sends one event until it is acknowledged (fresh signature per retry, as Stripe does), then maybe again. */
  private async deliver(order: PlannedOrder, event: { id: string; type: string; body: string }): Promise<void> {
    order.sent.add(event.type);
    const deadline = Date.now() + 120_000;
    let signed: SignedRequest | undefined;
    for (let attempt = 0; ; attempt++) {
      if (Date.now() > deadline) {
        this.stats.violations.push(`event ${event.id}: not acknowledged before the deadline`);
        return;
      }
      if (attempt > 0) this.stats.freshSignatureRetries++;
      signed = this.sign(event.body);
      const res = await this.post(signed);
      if (res.status === 200) {
        this.acknowledged(order, event, res);
        break;
      }
      if (res.status !== 0 && res.status < 500) {
        this.stats.violations.push(`event ${event.id}: ${res.status} ${res.json?.reason}`);
        return;
      }
      this.stats.failedAttempts++;
      await sleep(Math.min(2_000, 50 * 2 ** attempt) * (0.5 + this.o.random()));
    }
    // Redeliveries after the acknowledgement: the exact bytes again, or a Stripe-style retry.
    const again: SignedRequest[] = [];
    if (this.o.random() < 0.25) {
      again.push(signed);
      this.stats.exactDuplicatesSent++;
    }
    if (this.o.random() < 0.25) {
      again.push(this.sign(event.body));
      this.stats.freshSignatureRetries++;
    }
    for (const copy of again) {
      const res = await this.post(copy);
      if (res.status === 200 && res.json?.status !== 'duplicate') {
        this.stats.violations.push(`event ${event.id}: a copy after the acknowledgement got ${res.json?.status}`);
      }
      if (res.status === 200) this.record200(res);
      else if (res.status !== 0 && res.status < 500)
        this.stats.violations.push(`event ${event.id} copy: ${res.status} ${res.json?.reason}`);
    }
  }

  private sign(body: string): SignedRequest {
    const signed = signRequest('stripe', this.o.secret, body);
    for (const hex of signed.headers['stripe-signature'].match(/[0-9a-f]{64}/g) ?? []) this.signatures.add(hex);
    return signed;
  }

  private async post(signed: SignedRequest): Promise<HttpResult> {
    const res = await send(`${this.target().url}/webhooks/${ENDPOINT}`, { method: 'POST', headers: signed.headers, body: signed.body });
    this.stats.requests++;
    this.count(`webhook ${res.status || res.error}`);
    return res;
  }

  private acknowledged(order: PlannedOrder, event: { id: string; type: string }, res: HttpResult): void {
    order.acked.add(event.type);
    this.ackedEventIds.add(event.id);
    this.stats.acked++;
    this.record200(res);
  }

  private record200(res: HttpResult): void {
    this.ackTimes.push([res.startedAt, res.endedAt]);
    if (res.json?.status === 'duplicate') this.stats.duplicatesAbsorbed++;
    if (res.json?.status === 'accepted') this.stats.accepted++;
  }

  private count(key: string): void {
    this.stats.byStatus[key] = (this.stats.byStatus[key] ?? 0) + 1;
  }
}

/** The final order status the acknowledged events allow (a refund waits for its payment). */
export function expectedStatus(order: PlannedOrder): string {
  if (!order.acked.has('payment_intent.succeeded')) return 'awaiting_payment';
  return order.acked.has('charge.refunded') ? 'refunded' : 'paid';
}
