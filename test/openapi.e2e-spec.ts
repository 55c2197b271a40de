import request from 'supertest';
import { z } from 'zod';
import * as responses from '../src/admin/admin.responses';
import { apiResponses } from '../src/admin/api-docs';
import { signStripe, stripeEvent } from './support/signers';
import { TestDatabase } from './support/test-database';
import { OPERATOR_TOKEN, TestApp, useTestApp, VIEWER_TOKEN } from './support/test-app';

describe('OpenAPI at /docs', () => {
  let t: TestApp;
  useTestApp({}, (started) => ({ t } = started));

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

/** The documented schemas by component name, as the document's `$ref`s name them. */
const SCHEMAS = new Map(
  Object.values(responses as Record<string, unknown>)
    .filter((s): s is z.ZodType => s instanceof z.ZodType)
    .map((s) => [`#/components/schemas/${apiResponses.get(s)!.id}`, s]),
);

type Operation = { responses: Record<string, { content?: { 'application/json'?: { schema?: { $ref?: string } } } }> };

/** The schema of an operation's success answer, by its `$ref` into components.schemas. */
function successSchema(op: Operation): string | undefined {
  const [, success] = Object.entries(op.responses).find(([status]) => status.startsWith('2')) ?? [];
  return success?.content?.['application/json']?.schema?.$ref;
}

describe('OpenAPI: the admin answers', () => {
  const SECRET = 'whsec_openapi_test_secret';
  const op = { Authorization: `Bearer ${OPERATOR_TOKEN}` };
  const viewer = { Authorization: `Bearer ${VIEWER_TOKEN}` };
  let db: TestDatabase;
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, object> } };
  useTestApp(
    { endpoints: [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'current', value: SECRET }] }] },
    (started) => ({ db, t } = started),
  );
  beforeAll(async () => {
    doc = (await request(t.url).get('/docs-json')).body;
  });

  it("document every admin route's success answer by a named schema", () => {
    const undocumented: string[] = [];
    for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/admin/'))) {
      for (const [method, operation] of Object.entries(item)) {
        const ref = successSchema(operation);
        if (!ref || !SCHEMAS.has(ref)) undocumented.push(`${method} ${path}`);
      }
    }
    expect(undocumented).toEqual([]);
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['InboxEvent', 'OutboxEntry', 'Stats', 'Series', 'Timeline']),
    );
  });

  it('are what the routes answer: each real answer parses with its documented schema, no field more or less', async () => {
    const signed = signStripe(stripeEvent({ id: 'evt_openapi' }), SECRET);
    expect((await request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body)).status).toBe(200);
    const [{ id }] = await db.query<{ id: string }>(`SELECT id::text FROM webhook_inbox WHERE event_id = 'evt_openapi'`);
    const [{ id: entry }] = await db.query<{ id: string }>(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, attempts, last_error)
       VALUES ('erp:order-paid:acme:openapi', 'erp', 'order-paid', 'acme', '{}', 'dead', 3, 'timeout') RETURNING id::text`,
    );
    const order = { tenantId: 'acme', id: 'o-openapi', totalMinor: 1200, currency: 'EUR', customerEmail: 'ann@example.com' };
    // [documented path, method, url, token, body]: the console's calls, as a viewer and as an operator.
    const calls: [string, 'get' | 'post', string, Record<string, string>, object?][] = [
      ['/admin/session', 'get', '/admin/session', viewer],
      ['/admin/orders', 'post', '/admin/orders', op, order],
      ['/admin/orders/{tenant}/{id}', 'get', '/admin/orders/acme/o-openapi', viewer],
      ['/admin/orders/{tenant}/{id}', 'get', '/admin/orders/acme/o-openapi', op],
      ['/admin/inbox/{id}/quarantine', 'post', `/admin/inbox/${id}/quarantine`, op, { reason: 'openapi test' }],
      ['/admin/inbox/{id}/replay', 'post', `/admin/inbox/${id}/replay`, op, { reason: 'openapi test' }],
      ['/admin/inbox/replay', 'post', '/admin/inbox/replay', op, { filter: {}, dryRun: true, reason: 'openapi test' }],
      ['/admin/inbox', 'get', '/admin/inbox', viewer],
      ['/admin/inbox/{id}', 'get', `/admin/inbox/${id}`, viewer],
      ['/admin/inbox/{id}', 'get', `/admin/inbox/${id}`, op],
      ['/admin/inbox/{id}/timeline', 'get', `/admin/inbox/${id}/timeline`, viewer],
      ['/admin/outbox/{id}/retry', 'post', `/admin/outbox/${entry}/retry`, op, { reason: 'openapi test' }],
      ['/admin/outbox', 'get', '/admin/outbox', viewer],
      ['/admin/outbox/{id}', 'get', `/admin/outbox/${entry}`, op],
      ['/admin/audit', 'get', '/admin/audit', viewer],
      ['/admin/stats', 'get', '/admin/stats', viewer],
      ['/admin/series', 'get', '/admin/series?window=24h', viewer],
      ['/admin/destinations', 'get', '/admin/destinations', viewer],
      ['/admin/reconciliation', 'get', '/admin/reconciliation', viewer],
      ['/admin/payload-keys', 'get', '/admin/payload-keys', viewer],
      ['/admin/erasure', 'post', '/admin/erasure', op, { email: 'ann@example.com', dryRun: true, reason: 'openapi test' }],
    ];
    for (const [path, method, url, token, body] of calls) {
      const res = await request(t.url)[method](url).set(token).send(body);
      const schema = SCHEMAS.get(successSchema(doc.paths[path][method])!)!;
      const parsed = schema.safeParse(res.body);
      expect({ call: `${method} ${url}`, status: res.status, issues: parsed.error?.issues ?? [] }).toEqual({
        call: `${method} ${url}`,
        status: Number(Object.keys(doc.paths[path][method].responses).find((s) => s.startsWith('2'))),
        issues: [],
      });
    }
  });
});

/** Every path Swagger serves (the router matches them in any case); the UI's init script carries the whole document. */
const DOCS_PATHS = [
  '/docs',
  '/docs/',
  '/docs/swagger-ui-init.js',
  '/docs-json',
  '/docs-yaml',
  '/DOCS-JSON',
  '/Docs/swagger-ui-init.js',
  '/DOCS/',
];
/** What production requires beyond the test defaults (destinations are never called here). */
const PRODUCTION = { NODE_ENV: 'production', ERP_URL: 'https://erp.invalid/', EMAIL_URL: 'https://email.invalid/' };

describe('OpenAPI in production: behind the admin token', () => {
  let t: TestApp;
  useTestApp({ env: PRODUCTION }, (started) => ({ t } = started));

  it('answers 401 without a valid admin token, for the UI, its init script and the JSON and YAML documents', async () => {
    for (const path of DOCS_PATHS) {
      for (const auth of [undefined, 'Bearer not-a-token']) {
        const res = await request(t.url)
          .get(path)
          .set(auth ? { Authorization: auth } : {});
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
    const res = await request(t.url)
      .get('/docs-json')
      .set({ Authorization: `Bearer ${VIEWER_TOKEN}` });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toContain('/admin/inbox');
    expect(res.headers['cache-control']).toBe('no-store');
  });
});

describe('OpenAPI with API_DOCS=public in production', () => {
  let t: TestApp;
  useTestApp({ env: { ...PRODUCTION, API_DOCS: 'public' } }, (started) => ({ t } = started));

  it('is open, as outside production', async () => {
    expect((await request(t.url).get('/docs-json')).status).toBe(200);
  });
});
