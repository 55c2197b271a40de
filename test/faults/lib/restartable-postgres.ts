import { rmSync } from 'node:fs';
import { Client } from 'pg';
import { EmbeddedDatabase, freePort, startEmbeddedPostgres } from '../../../src/database/embedded-postgres';

/** The suite's own embedded PostgreSQL: stopped and started again on the same port and data directory. */
export class RestartablePostgres {
  url = '';
  private db?: EmbeddedDatabase;
  private port = 0;

  constructor(private readonly dir: string) {}

  async start(): Promise<void> {
    this.port ||= await freePort();
    this.db = await startEmbeddedPostgres({ dir: this.dir, database: 'faults', persistent: true, port: this.port });
    this.url = this.db.url;
  }

  /** Fast shutdown (SIGINT): open transactions roll back, every connection is cut. */
  async stop(): Promise<void> {
    await this.db?.stop();
    this.db = undefined;
  }

  get running(): boolean {
    return this.db !== undefined;
  }

  async query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async destroy(): Promise<void> {
    await this.stop().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
