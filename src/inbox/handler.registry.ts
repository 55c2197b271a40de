import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { discoverMethods } from '../common/discovery';
import { HandlerOutcome, RegisteredHandler, WebhookBatchHandler, WebhookEventHandler } from './inbox.types';
import { WEBHOOK_EVENT_HANDLER, WebhookEventBinding } from './on-webhook-event.decorator';

/** Finds every `@OnWebhookEvent` method at start; one handler per `(provider, type)`. */
@Injectable()
export class HandlerRegistry implements OnModuleInit {
  private readonly logger = new Logger(HandlerRegistry.name);
  private readonly handlers = new Map<string, RegisteredHandler>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    for (const { metadata, method, label } of discoverMethods<WebhookEventBinding[]>(this.discovery, this.scanner, WEBHOOK_EVENT_HANDLER)) {
      for (const binding of metadata) this.register(binding, method as WebhookEventHandler | WebhookBatchHandler, label);
    }
  }

  register(binding: WebhookEventBinding, method: WebhookEventHandler | WebhookBatchHandler, label = 'handler'): void {
    const key = keyOf(binding.provider, binding.type);
    // Two handlers for one type would make "exactly once" ambiguous: refuse to start.
    if (this.handlers.has(key)) throw new Error(`two handlers for ${binding.provider} ${binding.type}`);
    const handler = binding.batch ? fromBatch(label, method as WebhookBatchHandler) : { id: label, handle: method as WebhookEventHandler };
    this.handlers.set(key, { ...handler, reads: binding.reads });
    this.logger.log({ provider: binding.provider, type: binding.type }, `handler registered: ${label}`);
  }

  find(provider: string, type: string): RegisteredHandler | undefined {
    return this.handlers.get(keyOf(provider, type));
  }

  /** The handlers of `provider`'s types (all types when `types` is undefined), with the payload paths each reads. */
  readersOf(provider: string, types?: ReadonlySet<string>): { handler: string; type: string; reads?: readonly string[] }[] {
    const readers: { handler: string; type: string; reads?: readonly string[] }[] = [];
    for (const [key, handler] of this.handlers) {
      const [p, type] = key.split('\u0000');
      if (p === provider && (!types || types.has(type))) readers.push({ handler: handler.id, type, reads: handler.reads });
    }
    return readers;
  }
}

/** A batch handler serves single events as batches of one: one implementation, one behaviour. */
function fromBatch(id: string, batch: WebhookBatchHandler): RegisteredHandler {
  return {
    id,
    batch,
    handle: async (event, tx): Promise<HandlerOutcome> => {
      const [result] = await batch([event], tx);
      if (result instanceof Error) throw result;
      return result;
    },
  };
}

function keyOf(provider: string, type: string): string {
  return `${provider}\u0000${type}`;
}
