import { createServer, IncomingMessage, Server } from 'node:http';

/** A local ERP + email API that answers at once and records when each operation key first arrived. */
export class Sink {
  readonly firstSeen = new Map<string, number>();
  requests = 0;
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(([status, body]) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  private async handle(req: IncomingMessage): Promise<[number, string]> {
    for await (const _ of req) {
      // drain the body; only the key matters here
    }
    const key = req.headers['idempotency-key'];
    if (req.method === 'GET') {
      const asked = decodeURIComponent(req.url!.split('/').pop() ?? '');
      return this.firstSeen.has(asked) ? [200, '{}'] : [404, '{}'];
    }
    this.requests++;
    if (typeof key === 'string' && !this.firstSeen.has(key)) this.firstSeen.set(key, performance.now());
    return [200, '{"status":"ok"}'];
  }

  /** ERP refunds whose first request came before their order's paid (or without it). */
  refundsBeforePaid(): number {
    let n = 0;
    for (const [key, at] of this.firstSeen) {
      if (!key.startsWith('erp:order-refunded:')) continue;
      const paid = this.firstSeen.get(key.replace('erp:order-refunded:', 'erp:order-paid:'));
      if (paid === undefined || paid > at) n++;
    }
    return n;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
