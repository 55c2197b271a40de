import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, ServerOptions as HttpsServerOptions } from 'node:https';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * Programmable misbehaviour for the next request(s):
 * - status: answer with this status (and headers, e.g. Retry-After), no effect
 *   unless `apply` (e.g. a 500 after committing);
 * - applyThenHang: apply the effect, never answer (the relay times out);
 * - hang: never answer, no effect;
 * - reset / applyThenReset: destroy the socket (without / after applying);
 * - slow: apply, answer 200 after `ms`;
 * - hold: apply nothing until the test calls release(status).
 */
export type Fault =
  | { kind: 'status'; status: number; headers?: Record<string, string>; apply?: boolean }
  | { kind: 'applyThenHang' }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'applyThenReset' }
  | { kind: 'slow'; ms: number }
  | { kind: 'hold' };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The Idempotency-Key header, or the key in the outcome query's path. */
  key?: string;
}

/**
 * An idempotent HTTP destination on 127.0.0.1:0, like a well-behaved ERP: one
 * effect per Idempotency-Key (a repeat is answered 200 without a second
 * effect; a repeat with a different body is 422, as Stripe does), every request
 * recorded with headers and body.
 */
export class FakeDestination {
  readonly requests: RecordedRequest[] = [];
  /** Applied effects: Idempotency-Key -> the body that was applied. */
  readonly effects = new Map<string, string>();
  url = '';
  private server!: Server;
  private readonly faults: Fault[] = [];
  private alwaysFault?: Fault;
  /** Fault for outcome queries (GET), if any. */
  queryFault?: Fault;
  /**
   * Programmable misbehaviour per request (the fault suite's chaos), consulted
   * after failAlways and failNext: undefined answers normally.
   */
  policy?: (request: { method: string; key: string; isQuery: boolean }) => Fault | undefined;
  /** Requests refused with 422 because their key came back with another body. */
  keyReuseConflicts = 0;
  private held: { res: ServerResponse; key: string; body: string }[] = [];
  private waiters: { n: number; resolve: () => void }[] = [];

  /** Requests refused with 401: no or a wrong bearer token, or (with `signingSecret`) a bad Standard Webhooks signature. */
  refused = 0;
  private readonly postPath: string;
  private readonly outcomePath?: string;

  /**
   * `postPath` takes operations (`/operations`, `/events`, ...); `outcomePath` is
   * the prefix of the outcome query (`/operations/` + key), none: no outcome query.
   * `bearer` / `signingSecret`: refuse requests without that token, or whose
   * Standard Webhooks signature does not verify, as an authenticated API would.
   */
  constructor(
    postPath: string,
    outcomePath?: string | boolean,
    private readonly auth: { bearer?: string; signingSecret?: string } = {},
  ) {
    this.postPath = postPath;
    this.outcomePath = outcomePath === true ? '/operations/' : outcomePath || undefined;
  }

  /** `tls`: serve HTTPS with these options (e.g. `requestCert` for mTLS). */
  async start(tls?: HttpsServerOptions): Promise<this> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    this.server = tls ? createHttpsServer(tls, handler) : createServer(handler);
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    return this;
  }

  /** The next `n` POSTs get `fault`. */
  failNext(n: number, fault: Fault): this {
    for (let i = 0; i < n; i++) this.faults.push(fault);
    return this;
  }

  /** Every request (POST and outcome query) gets `fault` until cleared with undefined. */
  failAlways(fault: Fault | undefined): this {
    this.alwaysFault = fault;
    return this;
  }

  /** Forgets requests, effects and faults (between tests). */
  reset(): void {
    this.requests.length = 0;
    this.effects.clear();
    this.faults.length = 0;
    this.alwaysFault = undefined;
    this.queryFault = undefined;
    this.policy = undefined;
    this.keyReuseConflicts = 0;
    this.refused = 0;
    this.held = [];
  }

  /** Answers every held request, or only those of operation `key`. */
  release(status = 200, key?: string): void {
    const answered = this.held.filter((h) => key === undefined || h.key === key);
    this.held = this.held.filter((h) => !answered.includes(h));
    for (const h of answered) {
      if (status >= 200 && status < 300) this.effects.set(h.key, h.body);
      h.res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    }
  }

  posts(key?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && (key === undefined || r.key === key));
  }

  queries(key?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && (key === undefined || r.key === key));
  }

  /** Resolves once `n` requests have arrived (fails the test after `timeoutMs`). */
  waitForRequests(n: number, timeoutMs = 10_000): Promise<void> {
    if (this.requests.length >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`fake saw ${this.requests.length} of ${n} requests`)), timeoutMs);
      this.waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    const isQuery = req.method === 'GET' && this.outcomePath !== undefined && path.startsWith(this.outcomePath);
    const key = isQuery ? decodeURIComponent(path.slice(this.outcomePath!.length)) : (req.headers['idempotency-key'] as string | undefined);
    this.requests.push({ method: req.method ?? '', path, headers: req.headers, body, key });
    for (const w of this.waiters.filter((w) => this.requests.length >= w.n)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    if (!this.authentic(req, body)) {
      this.refused++;
      return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthenticated"}');
    }

    if (isQuery) {
      const fault = this.alwaysFault ?? this.queryFault ?? this.policy?.({ method: 'GET', key: key!, isQuery: true });
      if (fault) return this.misbehave(fault, res, undefined, body);
      return void res.writeHead(this.effects.has(key!) ? 200 : 404).end();
    }
    if (req.method !== 'POST' || path !== this.postPath) return void res.writeHead(404).end();
    if (!key) return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"no key"}');
    const fault = this.alwaysFault ?? this.faults.shift() ?? this.policy?.({ method: 'POST', key, isQuery: false });
    if (fault) return this.misbehave(fault, res, key, body);
    this.apply(res, key, body);
  }

  private authentic(req: IncomingMessage, body: string): boolean {
    if (this.auth.bearer !== undefined && req.headers.authorization !== `Bearer ${this.auth.bearer}`) return false;
    if (this.auth.signingSecret === undefined || req.method !== 'POST') return true;
    try {
      // The reference library, with its own five-minute tolerance against the wall clock.
      new Webhook(this.auth.signingSecret).verify(body, req.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  }

  private apply(res: ServerResponse, key: string, body: string): void {
    const previous = this.effects.get(key);
    if (previous !== undefined && previous !== body) {
      this.keyReuseConflicts++;
      return void res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"key reused with another body"}');
    }
    this.effects.set(key, body);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ replayed: previous !== undefined }));
  }

  private misbehave(fault: Fault, res: ServerResponse, key: string | undefined, body: string): void {
    const applyEffect = () => key !== undefined && !this.effects.has(key) && this.effects.set(key, body);
    switch (fault.kind) {
      case 'status':
        if (fault.apply) applyEffect();
        return void res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers }).end('{}');
      case 'applyThenHang':
        applyEffect();
        return;
      case 'hang':
        return;
      case 'applyThenReset':
        applyEffect();
        return void res.socket?.destroy();
      case 'reset':
        return void res.socket?.destroy();
      case 'slow':
        setTimeout(() => (key !== undefined ? this.apply(res, key, body) : res.writeHead(200).end()), fault.ms);
        return;
      case 'hold':
        this.held.push({ res, key: key ?? '', body });
        return;
    }
  }
}

/** A fake ERP: `POST /operations`, outcome query `GET /operations/:key`. Its base URL is ERP_URL. */
export function startFakeErp(auth: { bearer?: string; signingSecret?: string } = {}): Promise<FakeDestination> {
  return new FakeDestination('/operations', '/operations/', auth).start();
}

/** A fake email API: `POST /send` (EMAIL_URL is `<url>/send`), no outcome query. */
export async function startFakeEmail(): Promise<FakeDestination & { sendUrl: string }> {
  const fake = await new FakeDestination('/send', false).start();
  return Object.assign(fake, { sendUrl: `${fake.url}/send` });
}

/** `DESTINATION_<NAME>_URL` for each fake, by destination name (the same variables production reads). */
export function destinationEnv(urls: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(urls).map(([name, url]) => [`DESTINATION_${name.toUpperCase()}_URL`, url]));
}

/**
 * A destination that takes anything (every request answered 200 `{}`): the fault
 * suite gives one to each destination a team registered besides the ERP and email,
 * so a production start finds every URL it requires.
 */
export async function startSinkDestination(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
