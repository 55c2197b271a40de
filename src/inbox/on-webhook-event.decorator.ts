export const WEBHOOK_EVENT_HANDLER = Symbol('WEBHOOK_EVENT_HANDLER');

export interface WebhookEventBinding {
  provider: string;
  type: string;
  /** The method takes `(events[], tx)` and answers one result per event (see WebhookBatchHandler). */
  batch?: boolean;
  /** JSON paths of the payload the method reads; undefined: all of it (an endpoint's `omit` may then drop nothing). */
  reads?: readonly string[];
}

/**
 * Marks a method of a Nest provider as the handler of one `(provider, type)`.
 * The method is `(event: InboxEvent, tx: UnitOfWork) => Promise<HandlerOutcome>`,
 * or with `{ batch: true }` a WebhookBatchHandler; it may be decorated more than
 * once to handle several types (a batch handler then sees them mixed, in order).
 * `reads` lists the payload paths it reads, so the start can refuse an endpoint's
 * `omit` that would drop one of them.
 */
export function OnWebhookEvent(
  provider: string,
  type: string,
  options: { batch?: boolean; reads?: readonly string[] } = {},
): MethodDecorator {
  return (_target, _key, descriptor: PropertyDescriptor) => {
    const bindings: WebhookEventBinding[] = Reflect.getMetadata(WEBHOOK_EVENT_HANDLER, descriptor.value) ?? [];
    Reflect.defineMetadata(
      WEBHOOK_EVENT_HANDLER,
      [...bindings, { provider, type, batch: options.batch, reads: options.reads }],
      descriptor.value,
    );
    return descriptor;
  };
}
