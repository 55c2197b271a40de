import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './app.factory';
import { loadConfig } from './config/load-config';
import { ConfigError } from './config/config.error';

async function bootstrap(): Promise<void> {
  const started = Date.now();
  const config = loadConfig(process.env);
  const app = await createApp(config, { logger: 'pino' });
  await app.listen(config.port);
  const logger = new Logger('Bootstrap');
  logger.log(`listening on port ${config.port} in ${Date.now() - started} ms (roles: ${[...config.roles].join(', ')})`);
  if (config.generatedAdminToken) {
    // Dev mode only: the token exists nowhere else, so print it once for the operator at the keyboard.
    process.stdout.write(`\nDev admin token (operator): ${config.generatedAdminToken}\n\n`);
  }
}

bootstrap().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : `start failed: ${(error as Error)?.message ?? error}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
