import { Agent, IncomingHttpHeaders, request } from 'node:http';

export interface HttpResult {
  /** 0 when no answer arrived (refused, reset, timeout). */
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any;
  /** Network error code when status is 0. */
  error?: string;
  startedAt: number;
  endedAt: number;
}

export interface SendOptions {
  method?: string;
  /** An array value sends the header once per element (duplicated headers). */
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** A slow body: chunks written with a pause before each one; `abort` destroys the socket after them. */
  chunks?: { data: Buffer; delayMs: number }[];
  abortAfterChunks?: boolean;
  timeoutMs?: number;
  agent?: Agent | false;
}

export const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One HTTP request with full control over headers and body, resolving (never
 * rejecting) with the answer or the network error. An early answer (413 while
 * the body is still being written) wins over the write error that follows it.
 */
export function send(url: string, options: SendOptions = {}): Promise<HttpResult> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Omit<HttpResult, 'startedAt' | 'endedAt'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...r, startedAt, endedAt: Date.now() });
    };
    const fail = (error: string) => finish({ status: 0, headers: {}, text: '', json: undefined, error });
    const target = new URL(url);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        agent: options.agent ?? keepAlive,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => undefined);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          finish({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('close', () => {
          if (!done) finish({ status: res.statusCode ?? 0, headers: res.headers, text: '', json: undefined });
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      fail('timeout');
    }, options.timeoutMs ?? 15_000);
    req.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
    try {
      for (const [name, value] of Object.entries(options.headers ?? {})) req.setHeader(name, value);
      // Node's client sends a GET/DELETE body with neither a length nor chunking: say how long it is.
      if (options.body !== undefined && !req.hasHeader('content-length') && !req.hasHeader('transfer-encoding')) {
        req.setHeader('content-length', Buffer.byteLength(options.body));
      }
    } catch (e) {
      req.destroy();
      return fail(`client_refused_header:${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    if (options.chunks) {
      void (async () => {
        for (const chunk of options.chunks!) {
          await sleep(chunk.delayMs);
          if (done || req.destroyed) return;
          req.write(chunk.data);
        }
        if (options.abortAfterChunks) {
          await sleep(50);
          req.destroy();
          fail('aborted_by_client');
        } else req.end();
      })();
    } else {
      req.end(options.body);
    }
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
