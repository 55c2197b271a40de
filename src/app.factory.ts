import { LoggerService, ModuleMetadata } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { json } from 'express';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { Clock } from './common/clock';
import { HttpExceptionFilter } from './common/http-exception.filter';

export interface CreateAppOptions {
  logger?: LoggerService | false;
  /** Extra modules (tests add fault hooks or fake providers here). */
  imports?: ModuleMetadata['imports'];
  /** Tests move time with their own clock. */
  clock?: Clock;
}

/**
 * Builds the application exactly as production runs it; main.ts and the tests
 * both come through here, so the tests exercise the real middleware path.
 */
export async function createApp(config: AppConfig, options: CreateAppOptions = {}): Promise<NestExpressApplication> {
  const root = AppModule.forRoot(config, options.clock);
  root.imports = [...(root.imports ?? []), ...(options.imports ?? [])];
  const app = await NestFactory.create<NestExpressApplication>(root, {
    // Webhook bodies are read raw by the route itself; JSON parsing is for the admin API only.
    bodyParser: false,
    logger: options.logger,
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(/^\/(?!webhooks\/)/, json({ limit: '256kb' }));
  app.useGlobalFilters(new HttpExceptionFilter());
  app.enableShutdownHooks();
  return app;
}
