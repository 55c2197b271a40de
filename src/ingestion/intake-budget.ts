import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { Gauge } from 'prom-client';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { BusyError } from '../common/errors';
import { InboxService } from '../inbox/inbox.service';
import { MetricsRegistry } from '../observability/metrics.registry';
import { intakeClientOf } from './intake-client';

/** What one request has taken from the budget; `close()` gives it all back. */
export interface BodyHold {
  /** Takes `bytes` more; throws BusyError (503, connection closed) past the budget or past its client's share of it. */
  take(bytes: number): void;
  /**
   * Takes a place among its endpoint's accepts in flight (queued or committing), and among its
   * client's accepts to that endpoint; throws BusyError (503) past either share.
   */
  admit(endpointId: string): void;
  close(): void;
}

/**
 * The memory strangers may fill before any signature is checked: a body can only
 * be verified once it is whole, so every webhook request in flight buffers its
 * bytes until its commit answers. One budget across all of them, so many slow
 * or large senders together cannot exhaust the heap; and a share of it per client
 * (intake-client.ts), so one client filling its share is refused
 * (`intake_client_busy`) while the others are still answered. The accept queue,
 * once a request is verified, is shared per endpoint: one endpoint's flood (a
 * provider's bulk update, a storm of one organisation) is refused
 * `intake_endpoint_busy` first, and the other endpoints keep the rest; and per
 * client within an endpoint, never across endpoints: a provider sends every
 * endpoint's events from the same few addresses (all from one behind a proxy that
 * names none), so a client's share across endpoints let one endpoint's flood refuse
 * the others.
 */
@Injectable()
export class IntakeBudget {
  private buffered = 0;
  /** Bytes buffered per client; a client is dropped when it holds none. */
  private readonly clients = new Map<string, number>();
  /** Accepts in flight per endpoint, and per endpoint and client; dropped at none. */
  private readonly endpoints = new Map<string, number>();
  private readonly senders = new Map<string, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    registry: MetricsRegistry,
    inbox: InboxService,
  ) {
    const budget = this;
    new Gauge({
      name: 'webhook_intake_buffered_bytes',
      help: 'Bytes of webhook bodies held by requests in flight (bounded by INGEST_BUFFER_MAX_BYTES)',
      registers: [registry],
      collect() {
        this.set(budget.buffered);
      },
    });
    new Gauge({
      name: 'webhook_intake_queued',
      help: 'Accepts waiting for a group commit (bounded by INGEST_QUEUE_MAX)',
      registers: [registry],
      collect() {
        this.set(inbox.acceptsQueued());
      },
    });
  }

  /** A hold for the request `req`, charged to its client. */
  open(req: IncomingMessage): BodyHold {
    const limits = this.config.intake;
    const client = intakeClientOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], limits.trustedProxies);
    let held = 0;
    let admitted: { endpoint: string; sender: string } | undefined;
    return {
      take: (bytes) => {
        const mine = this.clients.get(client) ?? 0;
        if (this.buffered + bytes > limits.bufferMaxBytes) throw new BusyError('intake_busy', 1, true);
        if (mine + bytes > limits.bufferPerClientMaxBytes) throw new BusyError('intake_client_busy', 1, true);
        this.buffered += bytes;
        this.clients.set(client, mine + bytes);
        held += bytes;
      },
      admit: (endpoint) => {
        const sender = `${endpoint}\n${client}`;
        const endpointAccepts = this.endpoints.get(endpoint) ?? 0;
        const senderAccepts = this.senders.get(sender) ?? 0;
        if (endpointAccepts >= limits.queuePerEndpointMax) throw new BusyError('intake_endpoint_busy', 1);
        if (senderAccepts >= limits.queuePerClientMax) throw new BusyError('intake_client_busy', 1);
        this.endpoints.set(endpoint, endpointAccepts + 1);
        this.senders.set(sender, senderAccepts + 1);
        admitted = { endpoint, sender };
      },
      close: () => {
        if (held > 0) {
          this.buffered -= held;
          release(this.clients, client, held);
          held = 0;
        }
        if (admitted) {
          release(this.endpoints, admitted.endpoint, 1);
          release(this.senders, admitted.sender, 1);
          admitted = undefined;
        }
      },
    };
  }
}

/** Gives `amount` of `key`'s count back, dropping the key at zero. */
function release(counts: Map<string, number>, key: string, amount: number): void {
  const left = counts.get(key)! - amount;
  if (left === 0) counts.delete(key);
  else counts.set(key, left);
}
