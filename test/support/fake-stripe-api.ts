import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface StripeCall {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The Stripe-Account header (connected-account requests). */
  account?: string;
  status: number;
  /** Date.now() when the call arrived. */
  at: number;
}

export interface StripeEventObject {
  id: string;
  object: 'event';
  created: number;
  type: string;
  livemode: boolean;
  account?: string;
  data: { object: Record<string, unknown> };
  [key: string]: unknown;
}

/**
 * A local Stripe API on 127.0.0.1:0 that the official SDK talks to (host, port,
 * protocol): the wire format of the real one for the calls the product makes
 * (GET /v1/payment_intents/:id, /v1/charges/:id, /v1/events with `created[...]`,
 * `types[...]`, `delivery_success`, `limit`, `starting_after`), Bearer keys,
 * `Stripe-Account`, error bodies `{error: {type, code, message}}`, a read rate
 * limit answered 429 with Retry-After, and outages. Every call is recorded.
 */
export class FakeStripeApi {
  readonly paymentIntents = new Map<string, Record<string, unknown>>();
  readonly charges = new Map<string, Record<string, unknown>>();
  /** Events Stripe has, whatever was delivered; `deliveryFailed` ids answer `delivery_success=false`. */
  readonly events: StripeEventObject[] = [];
  readonly deliveryFailed = new Set<string>();
  readonly calls: StripeCall[] = [];
  readonly keys = new Set<string>();
  /** Reads per second (a sliding second); past it, 429 with `Retry-After: 1`. Undefined: no limit. */
  readsPerSecond?: number;
  /** `down`: every call 500; `reset`: every connection dropped. */
  mode: 'up' | 'down' | 'reset' = 'up';
  /** The next calls answered 429 with this Retry-After (seconds). */
  private throttled: { remaining: number; retryAfter: string }[] = [];
  /** Awaited before each call is answered (a test holds a call to simulate an instance dying mid-run). */
  beforeAnswer?: (call: StripeCall) => Promise<void>;
  url = '';
  port = 0;
  private server!: Server;
  private recent: number[] = [];

  constructor(key: string) {
    this.keys.add(key);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The next `n` calls answer 429 with `Retry-After: <seconds>`. */
  throttleNext(n: number, retryAfterSeconds: number): void {
    this.throttled.push({ remaining: n, retryAfter: String(retryAfterSeconds) });
  }

  callsTo(prefix: string): StripeCall[] {
    return this.calls.filter((c) => c.path.startsWith(prefix));
  }

  /** A PaymentIntent and the Charge it made, as Stripe keeps them. */
  addPayment(
    id: string,
    fields: { amount: number; currency: string; status?: string; orderId: string; refunded?: number },
  ): { pi: Record<string, unknown>; charge: Record<string, unknown> } {
    const chargeId = `ch_${id.replace(/^pi_/, '')}`;
    const pi = {
      id,
      object: 'payment_intent',
      amount: fields.amount,
      currency: fields.currency,
      status: fields.status ?? 'succeeded',
      latest_charge: chargeId,
      metadata: { order_id: fields.orderId },
      livemode: false,
    };
    const refunded = fields.refunded ?? 0;
    const charge = {
      id: chargeId,
      object: 'charge',
      amount: fields.amount,
      currency: fields.currency,
      status: 'succeeded',
      paid: true,
      payment_intent: id,
      refunded: refunded >= fields.amount,
      amount_refunded: refunded,
      metadata: { order_id: fields.orderId },
      livemode: false,
    };
    this.paymentIntents.set(id, pi);
    this.charges.set(chargeId, charge);
    return { pi, charge };
  }

  /** Stores an event as Stripe would list it (newest first by `created`). */
  addEvent(event: StripeEventObject, options: { deliveryFailed?: boolean } = {}): StripeEventObject {
    this.events.push(event);
    if (options.deliveryFailed) this.deliveryFailed.add(event.id);
    return event;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const account = req.headers['stripe-account'] as string | undefined;
    const call: StripeCall = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      account,
      status: 0,
      at: Date.now(),
    };
    this.calls.push(call);
    req.resume();
    const hold = this.beforeAnswer?.(call);
    if (hold) void hold.then(() => this.answer(req, res, url, call));
    else this.answer(req, res, url, call);
  }

  private answer(req: IncomingMessage, res: ServerResponse, url: URL, call: StripeCall): void {
    const account = call.account;
    if (res.destroyed) return;
    if (this.mode === 'reset') {
      req.socket.destroy();
      return;
    }
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      call.status = status;
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${this.calls.length}`, ...headers });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, type: string, message: string, code?: string, headers?: Record<string, string>) =>
      send(status, { error: { type, message, ...(code && { code }) } }, headers);

    if (this.mode === 'down') return error(500, 'api_error', 'An unknown error occurred');
    const auth = req.headers.authorization ?? '';
    const key = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!this.keys.has(key)) {
      // As Stripe answers: the message quotes the key's last characters.
      return error(401, 'invalid_request_error', `Invalid API Key provided: ${key.slice(0, 8)}****${key.slice(-4)}`);
    }
    const throttle = this.throttled[0];
    if (throttle) {
      if (--throttle.remaining <= 0) this.throttled.shift();
      return error(429, 'invalid_request_error', 'Too many requests', 'rate_limit', { 'retry-after': throttle.retryAfter });
    }
    if (this.readsPerSecond !== undefined) {
      const now = Date.now();
      this.recent = this.recent.filter((t) => t > now - 1000);
      if (this.recent.length >= this.readsPerSecond) {
        return error(429, 'invalid_request_error', 'Too many requests', 'rate_limit', { 'retry-after': '1' });
      }
      this.recent.push(now);
    }
    if (req.method !== 'GET') return error(404, 'invalid_request_error', 'Unrecognized request URL');

    const [, v1, resource, id] = url.pathname.split('/');
    if (v1 !== 'v1') return error(404, 'invalid_request_error', 'Unrecognized request URL');
    if (resource === 'payment_intents' || resource === 'charges') {
      const object = (resource === 'charges' ? this.charges : this.paymentIntents).get(decodeURIComponent(id ?? ''));
      if (!object) {
        const noun = resource === 'charges' ? 'charge' : 'payment_intent';
        return error(404, 'invalid_request_error', `No such ${noun}: '${id}'`, 'resource_missing');
      }
      return send(200, object);
    }
    if (resource === 'events' && !id) return send(200, this.list(url.searchParams, account));
    return error(404, 'invalid_request_error', 'Unrecognized request URL');
  }

  private list(q: URLSearchParams, account: string | undefined): unknown {
    const num = (name: string) => (q.has(name) ? Number(q.get(name)) : undefined);
    const gte = num('created[gte]');
    const gt = num('created[gt]');
    const lt = num('created[lt]');
    const lte = num('created[lte]');
    const types = [...q.entries()].filter(([k]) => /^types\[\d*\]$/.test(k)).map(([, v]) => v);
    const limit = Math.min(100, num('limit') ?? 10);
    let events = this.events
      .filter((e) => (account ? e.account === account : e.account === undefined))
      .filter((e) => (gte === undefined || e.created >= gte) && (gt === undefined || e.created > gt))
      .filter((e) => (lt === undefined || e.created < lt) && (lte === undefined || e.created <= lte))
      .filter((e) => types.length === 0 || types.includes(e.type))
      .filter((e) => q.get('delivery_success') !== 'false' || this.deliveryFailed.has(e.id))
      .sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const after = q.get('starting_after');
    if (after) events = events.slice(events.findIndex((e) => e.id === after) + 1);
    const page = events.slice(0, limit);
    return { object: 'list', url: '/v1/events', has_more: events.length > limit, data: page };
  }
}
