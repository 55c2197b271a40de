import { createHmac } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface GithubDelivery {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  duration: number;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
  /** Not part of the list's wire format: what a redelivery sends again. */
  payload: object;
}

export interface GithubCall {
  method: string;
  path: string;
  query: URLSearchParams;
  status: number;
  at: number;
}

/**
 * A local GitHub REST API on 127.0.0.1:0 for `@octokit/rest`: a repository or
 * organisation hook's deliveries (`GET .../hooks/:id/deliveries`, newest first,
 * `cursor` paging in the Link header) and redelivery (`POST .../deliveries/:id/attempts`,
 * 202), which sends the delivery again to `webhookUrl`, signed like GitHub
 * (X-Hub-Signature-256, the same X-GitHub-Delivery). Rate-limit headers on every
 * answer; `Bad credentials` 401 for an unknown token.
 */
export class FakeGithubApi {
  readonly deliveries: GithubDelivery[] = [];
  readonly calls: GithubCall[] = [];
  readonly redeliveries: number[] = [];
  readonly tokens = new Set<string>();
  /** Calls left before x-ratelimit-remaining says 0, and when the window resets. */
  rateLimit = { remaining: 5000, resetAt: Math.floor(Date.now() / 1000) + 3600 };
  /** Delivery ids (guids) whose redeliveries are signed with another secret than the hook's: refused with a 401. */
  readonly signedWrongly = new Set<string>();
  webhookUrl = '';
  url = '';
  private server!: Server;
  private nextId = 1;

  constructor(
    token: string,
    private readonly hookId: string,
    private readonly secret: string,
  ) {
    this.tokens.add(token);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A delivery attempt as GitHub records it (newest last here, listed newest first). */
  addDelivery(guid: string, statusCode: number, payload: object, event = 'push', agoSeconds = 60): GithubDelivery {
    const delivery: GithubDelivery = {
      id: this.nextId++,
      guid,
      delivered_at: new Date(Date.now() - agoSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      redelivery: this.deliveries.some((d) => d.guid === guid),
      duration: 0.12,
      status: statusCode >= 200 && statusCode < 300 ? 'OK' : 'Invalid HTTP Response: 502',
      status_code: statusCode,
      event,
      action: null,
      installation_id: null,
      repository_id: 42,
      payload,
    };
    this.deliveries.push(delivery);
    return delivery;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const call: GithubCall = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, status: 0, at: Date.now() };
    this.calls.push(call);
    req.resume();
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      call.status = status;
      if (this.rateLimit.remaining > 0) this.rateLimit.remaining--;
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'x-github-api-version-selected': '2022-11-28',
        'x-ratelimit-limit': '5000',
        'x-ratelimit-remaining': String(this.rateLimit.remaining),
        'x-ratelimit-reset': String(this.rateLimit.resetAt),
        ...headers,
      });
      res.end(status === 204 ? undefined : JSON.stringify(body));
    };
    const auth = req.headers.authorization ?? '';
    const token = auth.replace(/^(token|bearer) /i, '');
    if (!this.tokens.has(token))
      return send(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' });
    const match = /^\/(?:repos\/[^/]+\/[^/]+|orgs\/[^/]+)\/hooks\/(\d+)\/deliveries(?:\/(\d+)\/attempts)?$/.exec(url.pathname);
    if (!match || match[1] !== this.hookId)
      return send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest', status: '404' });
    if (match[2] && req.method === 'POST') {
      const delivery = this.deliveries.find((d) => d.id === Number(match[2]));
      if (!delivery) return send(404, { message: 'Not Found', status: '404' });
      this.redeliveries.push(delivery.id);
      send(202, {});
      await this.redeliver(delivery);
      return;
    }
    if (req.method !== 'GET' || match[2]) return send(404, { message: 'Not Found', status: '404' });
    const perPage = Math.min(100, Number(url.searchParams.get('per_page') ?? 30));
    const newestFirst = [...this.deliveries].reverse();
    const after = url.searchParams.get('cursor');
    const start = after ? newestFirst.findIndex((d) => String(d.id) === after) : 0;
    const page = newestFirst.slice(start, start + perPage);
    const next = newestFirst[start + perPage];
    const link: Record<string, string> = next
      ? { link: `<${this.url}${url.pathname}?per_page=${perPage}&cursor=${next.id}>; rel="next"` }
      : {};
    send(
      200,
      page.map(({ payload: _payload, ...wire }) => wire),
      link,
    );
  }

  /** Sends the delivery again, signed, with its original X-GitHub-Delivery; records the new attempt. */
  private async redeliver(delivery: GithubDelivery): Promise<void> {
    const body = JSON.stringify(delivery.payload);
    const secret = this.signedWrongly.has(delivery.guid) ? `not-${this.secret}` : this.secret;
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const res = await fetch(this.webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-delivery': delivery.guid,
        'x-github-event': delivery.event,
        'x-github-hook-id': this.hookId,
        'x-hub-signature-256': signature,
        'user-agent': 'GitHub-Hookshot/fake',
      },
      body,
    }).catch(() => undefined);
    if (res) await res.text();
    this.addDelivery(delivery.guid, res?.status ?? 502, delivery.payload, delivery.event, 0);
  }
}
