import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * A Stripe events list (GET /v1/events, `limit`, `starting_after`) over a fixed set of
 * payment events, newest first, for the fairness stage's reconciliation variant: a page is
 * a slice of one array built once (test/support/fake-stripe-api.ts filters and sorts every
 * event on each call, too much CPU beside the service for 50,000 events). Every event is
 * inside any window that includes the last minutes; the key is not checked.
 */
export class StripeEventsApi {
  url = '';
  calls = 0;
  private server?: Server;
  private readonly events: object[] = [];
  private readonly index = new Map<string, number>();

  /** Acme's payments `evt_<from>`..`evt_<from + count - 1>` of orders `o<n>`, as seedOrders names them. */
  constructor(from: number, count: number) {
    const created = Math.floor(Date.now() / 1000) - 60;
    for (let n = from + count - 1; n >= from; n--) {
      const id = `evt_${n}`;
      this.index.set(id, this.events.length);
      this.events.push({
        id,
        object: 'event',
        api_version: '2026-10-28',
        created,
        livemode: false,
        pending_webhooks: 1,
        type: 'payment_intent.succeeded',
        data: {
          object: {
            id: `pi_${n}`,
            object: 'payment_intent',
            amount: 1000,
            amount_received: 1000,
            currency: 'eur',
            status: 'succeeded',
            metadata: { order_id: `o${n}` },
          },
        },
      });
    }
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.calls++;
      const url = new URL(req.url ?? '/', 'http://fake');
      req.resume();
      if (url.pathname !== '/v1/events') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"type":"invalid_request_error"}}');
        return;
      }
      const limit = Math.min(100, Number(url.searchParams.get('limit') ?? 10));
      const after = url.searchParams.get('starting_after');
      const start = after ? (this.index.get(after) ?? this.events.length) + 1 : 0;
      const data = this.events.slice(start, start + limit);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', url: '/v1/events', has_more: start + limit < this.events.length, data }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
