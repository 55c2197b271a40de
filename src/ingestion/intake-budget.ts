import { Inject, Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { BusyError } from '../common/errors';
import { InboxService } from '../inbox/inbox.service';
import { MetricsRegistry } from '../observability/metrics.registry';

/** The bytes one request has taken from the budget; `close()` gives them back. */
export interface BodyHold {
  /** Takes `bytes` more; throws BusyError (503, connection closed) past the budget. */
  take(bytes: number): void;
  close(): void;
}

/**
 * The memory strangers may fill before any signature is checked: a body can only
 * be verified once it is whole, so every webhook request in flight buffers its
 * bytes until its commit answers. One budget across all of them, so many slow
 * or large senders together cannot exhaust the heap.
 */
@Injectable()
export class IntakeBudget {
  private buffered = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, registry: MetricsRegistry, inbox: InboxService) {
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

  open(): BodyHold {
    let held = 0;
    return {
      take: (bytes) => {
        if (this.buffered + bytes > this.config.intake.bufferMaxBytes) throw new BusyError('intake_busy', 1, true);
        this.buffered += bytes;
        held += bytes;
      },
      close: () => {
        this.buffered -= held;
        held = 0;
      },
    };
  }
}
