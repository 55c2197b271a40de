import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { AppConfig } from './config/app-config';

const BUSY_BODY = JSON.stringify({ status: 'error', reason: 'too_many_connections', message: 'too busy: retry shortly' });
const BUSY_REPLY =
  'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n' +
  `Content-Length: ${Buffer.byteLength(BUSY_BODY)}\r\n\r\n${BUSY_BODY}`;

/**
 * Bounds what a stranger can hold on the HTTP server before any signature is
 * checked. Headers must arrive within `headersTimeoutMs` and the whole request
 * within `bodyTimeoutMs` (Node answers 408 and closes the connection; the route
 * has then written nothing); past `maxConnections` open connections a new one is
 * answered 503 with Retry-After and closed, before any byte of it is parsed.
 */
export function applyHttpServerLimits(server: Server, limits: AppConfig['http']): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.bodyTimeoutMs;
  // Node checks both deadlines on this interval (30 s by default): a deadline is kept to within it.
  // A constructor option in the typings, but a plain property Node reads when the server starts listening.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.max(
    50,
    Math.min(1000, Math.floor(limits.headersTimeoutMs / 4)),
  );

  // Node's own connection listener (it attaches the HTTP parser) runs only for connections under the cap.
  const accept = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  let open = 0;
  server.on('connection', (socket: Socket) => {
    if (open >= limits.maxConnections) return refuse(socket);
    open++;
    socket.once('close', () => open--);
    for (const listener of accept) listener.call(server, socket);
  });
}

function refuse(socket: Socket): void {
  socket.on('error', () => socket.destroy());
  // Read and drop whatever the client sends, so the close is clean; never wait for it long.
  socket.resume();
  socket.setTimeout(1000, () => socket.destroy());
  socket.end(BUSY_REPLY);
}
