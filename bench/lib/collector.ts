import { createServer, Server } from 'node:http';

/**
 * Stands in for an OpenTelemetry collector: accepts OTLP/HTTP exports (POST
 * /v1/traces), answers an empty ExportTraceServiceResponse at once and counts
 * what arrived, so the traced stages pay the real export cost without a collector.
 */
export class FakeCollector {
  exports = 0;
  bytes = 0;
  url = '';
  private server?: Server;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.on('data', (chunk: Buffer) => (this.bytes += chunk.length));
      req.on('end', () => {
        this.exports++;
        res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
        res.end();
      });
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
