import { connect, Socket } from 'node:net';

export interface LoadRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface LoadResult {
  /** Index of each request answered 200, in completion order. */
  ok: number[];
  /** Milliseconds from sending each request to its whole answer, in completion order. */
  latencies: number[];
  /** Answers other than 200, by status code. */
  others: Map<number, number>;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** Each request as the bytes sent on the wire (before the clock starts). */
export function serialize(requests: LoadRequest[]): Buffer[] {
  return requests.map((r) => {
    const body = Buffer.from(r.body);
    const head = [`POST ${r.path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive', `Content-Length: ${body.length}`];
    for (const [name, value] of Object.entries(r.headers)) head.push(`${name}: ${value}`);
    return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), body]);
  });
}

/**
 * A closed-loop HTTP/1.1 load generator over `connections` keep-alive sockets,
 * each with one request in flight until all are sent. Requests are serialised
 * to bytes before the clock starts and answers are parsed only as far as the
 * status line and Content-Length: pgbench, the baseline, is a lean C client,
 * and a general-purpose HTTP client here cost the shared two cores about three
 * times as much CPU per request as this one, time the service under test then lacked.
 */
export async function runLoad(port: number, wire: Buffer[], connections: number): Promise<LoadResult> {
  const result: LoadResult = { ok: [], latencies: [], others: new Map() };
  let next = 0;
  await Promise.all(Array.from({ length: connections }, () => drive(port, wire, () => (next < wire.length ? next++ : -1), result)));
  return result;
}

function drive(port: number, wire: Buffer[], take: () => number, result: LoadResult): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ port, host: '127.0.0.1', noDelay: true });
    let current = -1;
    let sentAt = 0;
    let buffer = Buffer.alloc(0);
    const send = () => {
      current = take();
      if (current < 0) {
        socket.end();
        return resolve();
      }
      sentAt = performance.now();
      socket.write(wire[current]);
    };
    socket.on('connect', send);
    socket.on('error', reject);
    socket.on('close', () => {
      if (current >= 0) reject(new Error(`the service closed a connection with request ${current} in flight`));
    });
    socket.on('data', (chunk) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      const end = buffer.indexOf(HEADER_END);
      if (end < 0) return;
      const head = buffer.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      buffer = buffer.subarray(end + 4 + length);
      const status = Number(head.slice(9, 12));
      result.latencies.push(performance.now() - sentAt);
      if (status === 200) result.ok.push(current);
      else result.others.set(status, (result.others.get(status) ?? 0) + 1);
      if (/\r\nconnection: *close/i.test(head)) {
        // The service closes after this answer (a 503 that left a body unread): go on, like any client, on a new connection.
        current = -1;
        socket.destroy();
        return drive(port, wire, take, result).then(resolve, reject);
      }
      send();
    });
  });
}
