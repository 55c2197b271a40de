import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { EventEmitter } from 'node:events';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresConnectionOptions';
import { FORGET_CLAIM, JOURNAL_CLAIM } from './inbox.queries';

/**
 * Writes the claim journal (`inbox_claims`) outside the processing
 * transactions, whose rollback must not take the record with it. One connection
 * of its own, not the shared pool: a lane holding its events' locks must never
 * wait for a pooled connection that a request blocked on those locks holds.
 * Asynchronous commit: a journal row lost with a database crash only leaves one
 * interrupted attempt uncounted.
 */
@Injectable()
export class ClaimJournal implements OnApplicationShutdown {
  private readonly logger = new Logger(ClaimJournal.name);
  private pool?: Pool;

  constructor(private readonly dataSource: DataSource) {}

  /** Durable enough before the work starts: the claim of `eventIds` under the advisory lock `lockKey`. */
  async record(lockKey: string, worker: string, eventIds: string[]): Promise<void> {
    await this.connection().query({ name: 'inbox_journal_claim', text: JOURNAL_CLAIM, values: [lockKey, worker, eventIds] });
  }

  /** The claim's transaction failed and its worker already dealt with each event. */
  async forget(lockKey: string): Promise<void> {
    await this.connection().query(FORGET_CLAIM, [lockKey]);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool?.end();
  }

  private connection(): Pool {
    if (!this.pool) {
      this.pool = new Pool({
        connectionString: (this.dataSource.options as PostgresConnectionOptions).url,
        max: 1,
        connectionTimeoutMillis: 5_000,
        query_timeout: 30_000,
        keepAlive: true,
        application_name: 'webhook-inbox-claims',
        options: '-c synchronous_commit=off',
      });
      // A dropped idle connection is replaced on the next query; never crash on it.
      this.pool.on('error', (error) => this.logger.warn({ err: error.message }, 'claim journal connection lost'));
      this.pool.on('connect', (client: EventEmitter) => client.on('error', () => undefined));
    }
    return this.pool;
  }
}
