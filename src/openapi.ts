import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NextFunction, Request, Response } from 'express';
import { authenticateBearer } from './admin/admin-auth';
import { ADMIN_BEARER, responseComponents } from './admin/api-docs';
import { UnauthorizedError } from './common/errors';
import { errorResponse } from './common/error-response';
import { AdminToken, AppConfig } from './config/app-config';
import { loadConfig } from './config/load-config';
import { AppModule } from './app.module';

/**
 * Everything Swagger serves: /docs and its assets (the init script holds the document), /docs-json,
 * /docs-yaml. In any case: Express's router matches /DOCS-JSON to Swagger's route too.
 */
const DOCS_PATH = /^\/docs(?:$|[/-])/i;

/**
 * OpenAPI for the webhook and admin endpoints: UI at /docs, JSON at /docs-json. With
 * `apiDocs: 'admin'` (production's default) every docs path needs an admin token.
 */
export function setupOpenApi(app: INestApplication, { apiDocs, adminTokens }: Pick<AppConfig, 'apiDocs' | 'adminTokens'>): void {
  // Registered ahead of Swagger's own routes, so it runs first.
  if (apiDocs === 'admin') app.use(docsBehindAdminToken(adminTokens));
  SwaggerModule.setup('docs', app, openApiDocument(app), { jsonDocumentUrl: 'docs-json', customSiteTitle: 'Webhook inbox API' });
}

/** The document /docs-json serves: the routes' decorators, the admin answers' schemas, the webhook route. */
export function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Webhook inbox')
    .setDescription(
      'Receives provider webhooks durably and exactly once, and lets operators see, repair and replay them. ' +
        'Admin routes need `Authorization: Bearer <token>`: a viewer reads metadata; an operator also reads payloads and makes changes, ' +
        'each with a `reason` recorded in the audit log.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'ADMIN_TOKENS entry (viewer or operator)' }, ADMIN_BEARER)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when configured' }, 'metrics')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...responseComponents() } };
  document.paths['/webhooks/{endpointId}'] = WEBHOOK_PATH;
  return document;
}

/**
 * The same document without a database or a listening server: Nest's preview mode
 * registers the modules and their routes but instantiates no provider. For tooling
 * (the console's generated API types).
 */
export async function offlineOpenApiDocument(): Promise<OpenAPIObject> {
  // The routes do not depend on the endpoints: an empty file, removed afterwards.
  const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
  try {
    const endpointsFile = join(dir, 'endpoints.json');
    writeFileSync(endpointsFile, '{"endpoints":[]}');
    const config = loadConfig({ NODE_ENV: 'test', ROLES: 'api', WEBHOOK_ENDPOINTS_FILE: endpointsFile });
    const app = await NestFactory.create(AppModule.forRoot(config), { preview: true, logger: false, abortOnError: false });
    try {
      return openApiDocument(app);
    } finally {
      await app.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Any admin token (of any role or tenants) reads the docs: they describe the API, they hold no data. */
function docsBehindAdminToken(tokens: readonly AdminToken[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!DOCS_PATH.test(req.path)) return next();
    res.setHeader('Cache-Control', 'no-store');
    const result = authenticateBearer(req.headers.authorization, tokens);
    if (result.ok) return next();
    const { status, headers, body } = errorResponse(new UnauthorizedError(result.reason, 'a valid admin Bearer token is required'));
    res.status(status).set(headers).json(body);
  };
}

const errorReply = (description: string) => ({ description: `${description}; \`{status: "error", reason, message}\`` });

/** WebhookRoute is served ahead of Nest's router, so its contract is written out here. */
const WEBHOOK_PATH: OpenAPIObject['paths'][string] = {
  post: {
    tags: ['webhooks'],
    summary: 'Receive a provider webhook (Stripe, GitHub, Standard Webhooks, Shopify, Slack, configured senders)',
    description:
      'The raw body is verified with the endpoint secrets (signature, and timestamp where signed). 200 only once the event is durably committed as pending work; a duplicate gets the same 200.',
    parameters: [
      { name: 'endpointId', in: 'path', required: true, schema: { type: 'string' }, description: 'an id from the endpoints file' },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { type: 'object', description: 'the provider event, as the provider sent it' } } },
    },
    responses: {
      '200': {
        description:
          "`{status: accepted | duplicate | ignored, eventId[, reason]}`, a verified handshake's reply, or the answer a configured sender expects (text/plain, e.g. `[accepted]`)",
      },
      '204': { description: 'a configured sender that expects 204 (Discord)' },
      '400': errorReply('malformed after verification'),
      '401': errorReply('missing, invalid or stale signature'),
      '404': errorReply('unknown endpoint'),
      '413': errorReply('body too large'),
      '503': errorReply('database unavailable or commit outcome unknown (Retry-After)'),
    },
  },
};
