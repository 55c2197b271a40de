import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ADMIN_BEARER } from './admin/api-docs';

/** OpenAPI for the webhook and admin endpoints: UI at /docs, JSON at /docs-json. */
export function setupOpenApi(app: INestApplication): void {
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
