import { LoggerService, ModuleMetadata } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { json, NextFunction, Request, Response } from 'express';
import type { RequestListener, Server } from 'node:http';
import { WebhookRoute } from './ingestion/webhook.route';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { Clock } from './common/clock';
import { HttpExceptionFilter } from './common/http-exception.filter';
import { Logger as PinoLogger } from 'nestjs-pino';
import { pinoLoggerModule, requestLogger } from './observability/logging';
import { setupOpenApi } from './openapi';
import { noStore } from './common/no-store';
import { consoleDir, consoleRouter } from './console/console-static';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { applyHttpServerLimits } from './http-server-limits';

export interface CreateAppOptions {
  /** 'pino': JSON lines through nestjs-pino (production); tests pass a capturing LoggerService. */
  logger?: LoggerService | false | 'pino';
  /** Extra modules (tests add fault hooks or fake providers here). */
  imports?: ModuleMetadata['imports'];
  /** Tests move time with their own clock. */
  clock?: Clock;
  /** Tests read spans from an in-memory exporter (tracing on). */
  spanExporter?: SpanExporter;
}

/**
 * Builds the application exactly as production runs it; main.ts and the tests
 * both come through here, so the tests exercise the real middleware path.
 */
export async function createApp(config: AppConfig, options: CreateAppOptions = {}): Promise<NestExpressApplication> {
  const root = AppModule.forRoot(config, options.clock, options.spanExporter);
  const pino = options.logger === 'pino';
  root.imports = [...(root.imports ?? []), ...(pino ? [pinoLoggerModule(config)] : []), ...(options.imports ?? [])];
  const app = await NestFactory.create<NestExpressApplication>(root, {
    // Webhook bodies are read raw by the route itself; JSON parsing is for the admin API only.
    bodyParser: false,
    logger: options.logger === 'pino' ? undefined : options.logger,
    bufferLogs: pino,
    // A failed start is the one line main.ts prints, not the buffered start-up logs and a stack.
    autoFlushLogs: !pino,
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  // JSON bodies for the admin API; webhook bodies never reach Express (WebhookRoute reads them raw).
  const parseJson = json({ limit: '256kb' });
  app.use((req: Request, res: Response, next: NextFunction) =>
    parseJson(req, res, (error?: unknown) => (error ? rejectBody(res, error) : next())),
  );
  if (pino) {
    app.useLogger(app.get(PinoLogger));
    app.flushLogs();
  }
  app.useGlobalFilters(new HttpExceptionFilter());
  applyHttpServerLimits(app.getHttpServer() as Server, config.http);
  if (config.roles.has('api')) {
    // The console is a face of the admin API: not on an instance without it.
    app.use('/console', consoleRouter(consoleDir()));
    // Admin answers carry payloads and personal data: no browser or proxy cache keeps one.
    app.use('/admin', noStore);
    setupOpenApi(app, config);
    mountWebhookRoute(app);
  }
  // After the console's files, before Nest's routes (registered when the app starts): a line per API request.
  if (pino) app.use(requestLogger(config));
  app.enableShutdownHooks();
  return app;
}

/** Puts WebhookRoute in front of Express on the HTTP server (the same server `listen` and the tests use). */
function mountWebhookRoute(app: NestExpressApplication): void {
  const server = app.getHttpServer() as Server;
  const [expressApp] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', app.get(WebhookRoute).listener(expressApp));
}

/** body-parser failures as JSON with a reason (Express would answer with an HTML page). */
function rejectBody(res: Response, error: unknown): void {
  const tooLarge = (error as { status?: number }).status === 413;
  res.status(tooLarge ? 413 : 400).json({
    status: 'error',
    reason: tooLarge ? 'body_too_large' : 'invalid_json',
    message: tooLarge ? 'body too large' : 'body is not valid JSON',
  });
}
