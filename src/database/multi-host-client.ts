import { Client, ClientConfig } from 'pg';
import { DatabaseHost, DatabaseTarget } from '../config/database-url';

/** SQLSTATE 25006: a write reached a server (or a session) that is read-only: a standby, or a demoted primary. */
const READ_ONLY_SQL_TRANSACTION = '25006';

/** No listed server accepted a writable session: class 08 (connection exception), so the caller answers 503. */
export class NoWritableHostError extends Error {
  readonly code = '08001';
  constructor(tried: string[]) {
    super(`no writable PostgreSQL server: ${tried.join('; ')}`);
    this.name = 'NoWritableHostError';
  }
}

/**
 * Which of the listed servers sessions go to, shared by one pool and the connections beside it.
 * The writable one found last is kept until a session to it fails; the next connection then asks
 * each server in the listed order, as libpq does with target_session_attrs. Concurrent connections
 * share one search.
 */
export class DatabaseHosts {
  private current?: DatabaseHost;
  private search?: Promise<DatabaseHost>;

  constructor(readonly target: DatabaseTarget) {}

  /** The server to open a session on: the last writable one, or the first that answers writable now. */
  writable(config: ClientConfig): Promise<DatabaseHost> {
    if (this.current) return Promise.resolve(this.current);
    this.search ??= this.find(config).finally(() => (this.search = undefined));
    return this.search;
  }

  /** A session to `host` failed or found itself read-only: the next connection searches again. */
  lost(host: DatabaseHost): void {
    if (this.current === host) this.current = undefined;
  }

  private async find(config: ClientConfig): Promise<DatabaseHost> {
    const tried: string[] = [];
    for (const host of this.target.hosts) {
      const probe = new Client({ ...config, connectionString: this.target.urlFor(host) });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        if (await this.acceptable(probe)) {
          this.current = host;
          return host;
        }
        tried.push(`${host.host}:${host.port} ${this.target.targetSessionAttrs === 'primary' ? 'in recovery' : 'read-only'}`);
      } catch (error) {
        tried.push(`${host.host}:${host.port} ${(error as { code?: string }).code ?? (error as Error).message}`);
      } finally {
        await probe.end().catch(() => undefined);
      }
    }
    throw new NoWritableHostError(tried);
  }

  /** libpq's checks: `SHOW transaction_read_only` for read-write, `pg_is_in_recovery()` for primary. */
  async acceptable(client: Client): Promise<boolean> {
    switch (this.target.targetSessionAttrs) {
      case 'any':
        return true;
      case 'read-write':
        return (
          (await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only')).rows[0].transaction_read_only === 'off'
        );
      case 'primary':
        return !(await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery')).rows[0].recovery;
    }
  }
}

export interface MultiHostClientConfig extends ClientConfig {
  databaseHosts: DatabaseHosts;
}

/**
 * A pg Client that connects to the writable server of a DATABASE_URL with several hosts (the pool's
 * `Client`, data-source.ts). node-postgres has no multi-host support (its issue #1470). A session
 * that fails (reset, refused, terminated by a shutdown) or meets a read-only server is dropped and
 * the next connection searches again: requests in between fail as "database unavailable" (503).
 */
export class MultiHostClient extends Client {
  private readonly hosts: DatabaseHosts;
  private readonly config: MultiHostClientConfig;
  private server?: DatabaseHost;

  constructor(config: MultiHostClientConfig) {
    super(config);
    this.config = config;
    this.hosts = config.databaseHosts;
    // Any 'error' on a client is its connection failing: the server may be gone.
    this.on('error', () => this.serverLost());
  }

  override connect(): Promise<Client>;
  override connect(callback: (err: Error) => void): void;
  override connect(callback?: (err: Error) => void): Promise<Client> | void {
    const connected = this.connectToWritable();
    if (!callback) return connected;
    connected.then(() => callback(undefined as unknown as Error), callback);
  }

  private async connectToWritable(): Promise<Client> {
    const server = await this.hosts.writable(this.config);
    // The pool's connection timeout destroys the socket while the search still runs.
    if (this.connection.stream.destroyed) throw new Error('timeout expired');
    this.server = server;
    this.host = server.host;
    this.port = server.port;
    // What a password callback (or .pgpass) is asked for.
    Object.assign((this as unknown as { connectionParameters: object }).connectionParameters, { host: server.host, port: server.port });
    try {
      await super.connect();
    } catch (error) {
      this.serverLost();
      throw error;
    }
    // The server found last may have become a standby since (a switchover): libpq checks every session.
    if (!(await this.hosts.acceptable(this).catch(() => false))) {
      this.serverLost();
      await this.end().catch(() => undefined);
      throw new NoWritableHostError([`${server.host}:${server.port} no longer writable`]);
    }
    return this;
  }

  override query(...args: any[]): any {
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      args[args.length - 1] = (error: Error | null, result: unknown) => {
        if (error) this.checkFailure(error);
        callback(error, result);
      };
      return (super.query as (...a: unknown[]) => unknown)(...args);
    }
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) result.catch((error: Error) => this.checkFailure(error));
    return result;
  }

  /** A session that finds its server read-only is of no use: it ends, and the pool drops it on release. */
  private checkFailure(error: Error): void {
    if ((error as { code?: unknown }).code !== READ_ONLY_SQL_TRANSACTION) return;
    this.serverLost();
    this.end().catch(() => undefined);
  }

  private serverLost(): void {
    if (this.server) this.hosts.lost(this.server);
  }
}
