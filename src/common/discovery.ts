import { DiscoveryService, MetadataScanner } from '@nestjs/core';

/**
 * The provider instances whose class carries a name under `key` (set by a class
 * decorator such as @WebhookProviderFor), by that name. Two classes with one
 * name stop the start with the error `duplicate` builds.
 */
export function discoverNamed<T>(discovery: DiscoveryService, key: string | symbol, duplicate: (name: string) => Error): Map<string, T> {
  const found = new Map<string, T>();
  for (const wrapper of discovery.getProviders()) {
    if (!wrapper.metatype || !wrapper.instance) continue;
    const name = Reflect.getMetadata(key, wrapper.metatype) as string | undefined;
    if (!name) continue;
    if (found.has(name)) throw duplicate(name);
    found.set(name, wrapper.instance as T);
  }
  return found;
}

export interface DiscoveredMethod<M> {
  /** What the method decorator stored under the key. */
  metadata: M;
  /** The method, bound to its provider instance. */
  method: (...args: never[]) => unknown;
  /** `Class.method`, for logs and errors. */
  label: string;
}

/** The methods of the (singleton) providers that carry metadata under `key` (set by a method decorator such as @OnWebhookEvent). */
export function discoverMethods<M>(discovery: DiscoveryService, scanner: MetadataScanner, key: string | symbol): DiscoveredMethod<M>[] {
  const found: DiscoveredMethod<M>[] = [];
  for (const wrapper of discovery.getProviders()) {
    const instance = wrapper.instance as Record<string, unknown> | undefined;
    if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
    const prototype = Object.getPrototypeOf(instance);
    for (const name of scanner.getAllMethodNames(prototype)) {
      const method = prototype[name];
      const metadata = Reflect.getMetadata(key, method) as M | undefined;
      if (metadata !== undefined) found.push({ metadata, method: method.bind(instance), label: `${wrapper.name}.${name}` });
    }
  }
  return found;
}
