import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createDedicatedClient } from './data-source';

type Listener = () => void;

/**
 * LISTEN/NOTIFY wake-ups between instances (and at once inside one). Listening uses one dedicated
 * connection per instance (reconnected after failures); notifying is throttled
 * per channel, so a burst of inserts costs one NOTIFY, not one per row.
 * A missed notification only delays work until the next scheduled poll. Each NOTIFY carries
 * this instance's origin, so the instance ignores its own when it comes back through LISTEN: its
 * listeners were woken when it notified, and a second wake-up would cost an empty claim.
 */
@Injectable()
export class PgNotifications implements OnApplicationShutdown {
  private readonly logger = new Logger(PgNotifications.name);
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly lastNotify = new Map<string, number>();
  private readonly trailing = new Map<string, NodeJS.Timeout>();
  /** The payload of this instance's notifications. Older versions send none: theirs always wake. */
  private readonly origin = randomBytes(8).toString('hex');
  private client?: Client;
  private connecting?: Promise<void>;
  private closed = false;
  private retryTimer?: NodeJS.Timeout;

  constructor(private readonly dataSource: DataSource) {}

  /** Calls `listener` whenever any instance notifies `channel`. */
  async listen(channel: string, listener: Listener): Promise<void> {
    const set = this.listeners.get(channel) ?? new Set();
    set.add(listener);
    const isNew = !this.listeners.has(channel);
    this.listeners.set(channel, set);
    await this.connect();
    if (isNew && this.client) await this.client.query(`LISTEN ${quoteIdent(channel)}`).catch(() => undefined);
  }

  /**
   * Wakes this instance's listeners of `channel` at once, and every other
   * instance's through NOTIFY at most once per `throttleMs` (the last call in
   * a burst is never lost).
   */
  notify(channel: string, throttleMs = 20): void {
    if (this.closed) return;
    this.wakeHere(channel);
    const now = Date.now();
    const since = now - (this.lastNotify.get(channel) ?? 0);
    if (since >= throttleMs) {
      this.lastNotify.set(channel, now);
      this.send(channel);
    } else if (!this.trailing.has(channel)) {
      this.trailing.set(
        channel,
        setTimeout(() => {
          this.trailing.delete(channel);
          this.lastNotify.set(channel, Date.now());
          this.send(channel);
        }, throttleMs - since),
      );
    }
  }

  /**
   * For work this instance's own listeners take on (the relay for the outbox entries its worker
   * wrote): wakes them, and other instances only when this one has none (no such role here).
   * Those that have one are woken by their own work, and every instance polls.
   */
  notifyNearest(channel: string, throttleMs = 20): void {
    if (!this.listeners.get(channel)?.size) this.notify(channel, throttleMs);
    else if (!this.closed) this.wakeHere(channel);
  }

  private wakeHere(channel: string): void {
    for (const listener of this.listeners.get(channel) ?? []) setImmediate(listener);
  }

  private send(channel: string): void {
    this.dataSource.query('SELECT pg_notify($1, $2)', [channel, this.origin]).catch((error: Error) => {
      this.logger.debug({ channel, err: error.message }, 'notify failed; the next poll picks the work up');
    });
  }

  private connect(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= this.open().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = createDedicatedClient(this.dataSource);
    client.on('notification', (message) => {
      if (message.payload === this.origin) return;
      for (const listener of this.listeners.get(message.channel) ?? []) listener();
    });
    client.on('error', () => this.reconnectLater(client));
    client.on('end', () => this.reconnectLater(client));
    try {
      await client.connect();
      for (const channel of this.listeners.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
      this.client = client;
      // Work may have arrived while we were not listening.
      for (const set of this.listeners.values()) for (const listener of set) listener();
    } catch {
      this.reconnectLater(client);
    }
  }

  private reconnectLater(client: Client): void {
    if (this.client === client) this.client = undefined;
    client.removeAllListeners('end');
    client.end().catch(() => undefined);
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, 1_000);
    this.retryTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    for (const timer of this.trailing.values()) clearTimeout(timer);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
