import { DynamicModule, Type } from '@nestjs/common';
import { AppModule } from '../../src/app.module';
import { AppConfig } from '../../src/config/app-config';
import { DESTINATION_NAME } from '../../src/outbox/destinations/destination';

type ModuleRef = Type<unknown> | DynamicModule | Promise<DynamicModule> | undefined;

/**
 * The destinations the application registers through AppModule (a team's own
 * included, not a test's `imports`), read from the modules' metadata: a production
 * start in a test needs a URL for each, and a destination added later must not
 * break the tests that start in production.
 */
export function appDestinations(config: AppConfig): string[] {
  const names = new Set<string>();
  const seen = new Set<unknown>();
  const visit = (ref: ModuleRef): void => {
    if (!ref || ref instanceof Promise || seen.has(ref)) return;
    seen.add(ref);
    const dynamic = 'module' in ref ? ref : undefined;
    const type = dynamic ? dynamic.module : (ref as Type<unknown>);
    const providers = [...(Reflect.getMetadata('providers', type) ?? []), ...(dynamic?.providers ?? [])];
    for (const p of providers) {
      const cls = typeof p === 'function' ? p : p?.useClass;
      const name = cls && Reflect.getMetadata(DESTINATION_NAME, cls);
      if (typeof name === 'string') names.add(name);
    }
    for (const imported of [...(Reflect.getMetadata('imports', type) ?? []), ...(dynamic?.imports ?? [])]) visit(imported);
  };
  visit(AppModule.forRoot(config));
  return [...names];
}
