import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { authenticateBearer } from './admin/admin-auth';
import { ADMIN_BEARER } from './admin/api-docs';
import { UnauthorizedError } from './common/errors';
import { errorResponse } from './common/error-response';
import { AdminToken, AppConfig } from './config/app-config';

/** Everything Swagger serves: /docs and its assets (the init script holds the document), /docs-json, /docs-yaml. */
const DOCS_PATH = /^\/docs(?:$|[/-])/;

/**
 * OpenAPI for the webhook and admin endpoints: UI at /docs, JSON at /docs-json. With
 * `apiDocs: 'admin'` (production's default) every docs path needs an admin token.
 */
export function setupOpenApi(app: INestApplication, { apiDocs, adminTokens }: Pick<AppConfig, 'apiDocs' | 'adminTokens'>): void {
  // Registered ahead of Swagger's own routes, so it runs first.
  if (apiDocs === 'admin') app.use(docsBehindAdminToken(adminTokens));
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
  document.paths['/webhooks/{endpointId}'] = WEBHOOK_PATH;
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', customSiteTitle: 'Webhook inbox API' });
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
    summary: 'Receive a provider webhook (Stripe, GitHub, Standard Webhooks, Shopify)',
    description:
      'The raw body is verified with the endpoint secrets (signature, and timestamp where signed). 200 only once the event is durably committed as pending work; a duplicate gets the same 200.',
    parameters: [{ name: 'endpointId', in: 'path', required: true, schema: { type: 'string' }, description: 'an id from the endpoints file' }],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { type: 'object', description: 'the provider event, as the provider sent it' } } },
    },
    responses: {
      '200': { description: '`{status: accepted | duplicate | ignored, eventId[, reason]}`' },
      '400': errorReply('malformed after verification'),
      '401': errorReply('missing, invalid or stale signature'),
      '404': errorReply('unknown endpoint'),
      '413': errorReply('body too large'),
      '503': errorReply('database unavailable or commit outcome unknown (Retry-After)'),
    },
  },
};
