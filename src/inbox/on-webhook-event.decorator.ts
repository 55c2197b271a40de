export const WEBHOOK_EVENT_HANDLER = Symbol('WEBHOOK_EVENT_HANDLER');

export interface WebhookEventBinding {
  provider: string;
  type: string;
}

/**
 * Marks a method of a Nest provider as the handler of one `(provider, type)`.
 * The method is `(event: InboxEvent, tx: EntityManager) => Promise<HandlerOutcome>`;
 * it may be decorated more than once to handle several types.
 */
export function OnWebhookEvent(provider: string, type: string): MethodDecorator {
  return (_target, _key, descriptor: PropertyDescriptor) => {
    const bindings: WebhookEventBinding[] = Reflect.getMetadata(WEBHOOK_EVENT_HANDLER, descriptor.value) ?? [];
    Reflect.defineMetadata(WEBHOOK_EVENT_HANDLER, [...bindings, { provider, type }], descriptor.value);
    return descriptor;
  };
}
