import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
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
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', customSiteTitle: 'Webhook inbox API' });
}
