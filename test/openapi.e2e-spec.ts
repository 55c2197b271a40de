import request from 'supertest';
import { TestDatabase } from './support/test-database';
import { TestApp, useTestApp, VIEWER_TOKEN } from './support/test-app';

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

/** Every path Swagger serves; the UI's init script carries the whole document. */
const DOCS_PATHS = ['/docs', '/docs/', '/docs/swagger-ui-init.js', '/docs-json', '/docs-yaml'];
/** What production requires beyond the test defaults (destinations are never called here). */
const PRODUCTION = { NODE_ENV: 'production', ERP_URL: 'https://erp.invalid/', EMAIL_URL: 'https://email.invalid/' };

describe('OpenAPI in production: behind the admin token', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ env: PRODUCTION }, (started) => ({ db, t } = started));

  it('answers 401 without a valid admin token, for the UI, its init script and the JSON and YAML documents', async () => {
    for (const path of DOCS_PATHS) {
      for (const auth of [undefined, 'Bearer not-a-token']) {
        const res = await request(t.url).get(path).set(auth ? { Authorization: auth } : {});
        expect({ path, auth, status: res.status, reason: res.body.reason }).toEqual({
          path,
          auth,
          status: 401,
          reason: auth ? 'invalid_token' : 'missing_token',
        });
        expect(res.text).not.toContain('/admin/inbox');
      }
    }
  });

  it('serves them to any admin token, uncached', async () => {
    const res = await request(t.url).get('/docs-json').set({ Authorization: `Bearer ${VIEWER_TOKEN}` });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toContain('/admin/inbox');
    expect(res.headers['cache-control']).toBe('no-store');
  });
});

describe('OpenAPI with API_DOCS=public in production', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp({ env: { ...PRODUCTION, API_DOCS: 'public' } }, (started) => ({ db, t } = started));

  it('is open, as outside production', async () => {
    expect((await request(t.url).get('/docs-json')).status).toBe(200);
  });
});
