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
   * Takes a place among its client's and its endpoint's accepts in flight (queued or committing);
   * throws BusyError (503) past either share.
   */
  admit(endpointId: string): void;
  close(): void;
}

/** What one client holds: bytes buffered and accepts in flight. */
interface ClientShare {
  bytes: number;
  accepts: number;
}

/**
 * The memory strangers may fill before any signature is checked: a body can only
 * be verified once it is whole, so every webhook request in flight buffers its
 * bytes until its commit answers. One budget across all of them, so many slow
 * or large senders together cannot exhaust the heap; and a share of it, and of
 * the accept queue, per client (intake-client.ts), so one client filling its
 * share is refused (`intake_client_busy`) while the others are still answered.
 * The accept queue is shared per endpoint too (once the request is verified):
 * one endpoint's flood (a provider's bulk update, a storm of one organisation)
 * is refused `intake_endpoint_busy` first, and the other endpoints keep the rest.
 */
@Injectable()
export class IntakeBudget {
  private buffered = 0;
  private readonly clients = new Map<string, ClientShare>();
  /** Accepts in flight per endpoint; an endpoint is dropped when it has none. */
  private readonly endpoints = new Map<string, number>();

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
    let admitted: string | undefined;
    // The client's entry is looked up each time: it is dropped whenever its last hold gives everything back.
    return {
      take: (bytes) => {
        const mine = this.shareOf(client);
        if (this.buffered + bytes > limits.bufferMaxBytes) throw new BusyError('intake_busy', 1, true);
        if (mine.bytes + bytes > limits.bufferPerClientMaxBytes) throw new BusyError('intake_client_busy', 1, true);
        this.buffered += bytes;
        mine.bytes += bytes;
        held += bytes;
      },
      admit: (endpointId) => {
        const mine = this.shareOf(client);
        if (mine.accepts >= limits.queuePerClientMax) throw new BusyError('intake_client_busy', 1);
        const endpointAccepts = this.endpoints.get(endpointId) ?? 0;
        if (endpointAccepts >= limits.queuePerEndpointMax) throw new BusyError('intake_endpoint_busy', 1);
        mine.accepts++;
        this.endpoints.set(endpointId, endpointAccepts + 1);
        admitted = endpointId;
      },
      close: () => {
        const mine = this.clients.get(client);
        if (!mine) return;
        this.buffered -= held;
        mine.bytes -= held;
        if (admitted !== undefined) {
          mine.accepts--;
          const left = this.endpoints.get(admitted)! - 1;
          if (left === 0) this.endpoints.delete(admitted);
          else this.endpoints.set(admitted, left);
        }
        if (mine.bytes === 0 && mine.accepts === 0) this.clients.delete(client);
        held = 0;
        admitted = undefined;
      },
    };
  }

  private shareOf(client: string): ClientShare {
    let share = this.clients.get(client);
    if (!share) this.clients.set(client, (share = { bytes: 0, accepts: 0 }));
    return share;
  }
}
