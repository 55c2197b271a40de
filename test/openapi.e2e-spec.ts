import request from 'supertest';
import { TestDatabase } from './support/test-database';
import { TestApp, useTestApp } from './support/test-app';

describe('OpenAPI at /docs', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({}, (started) => ({ db, t } = started));

  it('serves the Swagger UI page and its assets', async () => {
    const page = await request(t.url).get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.text).toContain('swagger-ui');
    const js = await request(t.url).get('/docs/swagger-ui-bundle.js');
    expect(js.status).toBe(200);
  });

  it('documents every admin and webhook path with bearer auth', async () => {
    const doc = (await request(t.url).get('/docs-json')).body;
    const paths = Object.keys(doc.paths);
    for (const path of [
      '/webhooks/{endpointId}',
      '/admin/inbox',
      '/admin/inbox/{id}',
      '/admin/inbox/{id}/replay',
      '/admin/inbox/{id}/quarantine',
      '/admin/inbox/{id}/timeline',
      '/admin/inbox/replay',
      '/admin/outbox',
      '/admin/outbox/{id}/retry',
      '/admin/outbox/{id}/resolve',
      '/admin/orders',
      '/admin/orders/{tenant}/{id}',
      '/admin/audit',
      '/admin/stats',
      '/admin/session',
      '/metrics',
      '/health/ready',
    ]) {
      expect(paths).toContain(path);
    }
    expect(doc.components.securitySchemes.admin).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/admin/inbox/replay'].post.security).toEqual([{ admin: [] }]);
    const params = doc.paths['/admin/inbox'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['status', 'provider', 'type', 'tenant', 'endpoint', 'from', 'to', 'limit', 'cursor']));
    expect(doc.paths['/admin/inbox/replay'].post.requestBody.content['application/json'].schema.required).toEqual(
      expect.arrayContaining(['filter', 'dryRun', 'reason']),
    );
  });
});
