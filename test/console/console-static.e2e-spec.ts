import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { CONSOLE_CSP } from '../../src/console/console-static';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { buildConsole } from './console-build';

/** The console as the service serves it: its files, its policy, its size. */
describe('console: static files under /console', () => {
  let db: TestDatabase;
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    dir = buildConsole();
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('serves index.html with a strict CSP, never cached, never framed', async () => {
    const res = await request(t.url).get('/console/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("default-src 'self'");
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    // No inline script or style for the policy to block: every script and stylesheet is a file.
    expect(res.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(res.text).not.toMatch(/<style|\sstyle=/);
    expect((await request(t.url).get('/console')).status).toBe(301);
  });

  it('serves the hashed assets for good, and its JavaScript stays under 200 KB gzipped', async () => {
    const assets = readdirSync(join(dir, 'assets'));
    const scripts = assets.filter((f) => f.endsWith('.js'));
    expect(scripts.length).toBeGreaterThan(0);
    const res = await request(t.url).get(`/console/assets/${scripts[0]}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    const gzipped = scripts.reduce((n, f) => n + gzipSync(readFileSync(join(dir, 'assets', f))).length, 0);
    expect(gzipped).toBeLessThan(200 * 1024);
  });

  it('anything else under /console is a JSON 404 with a reason', async () => {
    const res = await request(t.url).get('/console/assets/nope.js');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ reason: 'not_found' });
    expect((await request(t.url).get('/console/../package.json')).status).toBe(404);
  });
});
