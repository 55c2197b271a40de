import { IncomingMessage, ServerResponse } from 'node:http';
import request from 'supertest';
import { ReconciliationScheduler } from '../../src/reconciliation/reconciliation.scheduler';
import { ReconciliationService } from '../../src/reconciliation/reconciliation.service';
import { FakeGithubApi } from '../support/fake-github-api';
import { signGithub } from '../support/signers';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';

const TOKEN = 'ghp_reconcile0123456789SECRETTOKEN';
const SECRET = 'gh-webhook-secret';
const HOOK = '123';
const OPERATOR = { name: 'ops', role: 'operator' } as const;

describe('reconciliation: GitHub asks for failed deliveries again', () => {
  let db: TestDatabase;
  let github: FakeGithubApi;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    github = await new FakeGithubApi(TOKEN, HOOK, SECRET).start();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [
        {
          id: 'gh-acme',
          provider: 'github',
          tenantId: 'acme',
          secrets: [{ label: 'current', value: SECRET }],
          expect: { hookId: HOOK },
          api: { env: 'GH_TOKEN', baseUrl: github.url, owner: 'acme', repo: 'shop', reconcile: { enabled: true, intervalSeconds: 60 } },
        },
      ],
      env: { GH_TOKEN: TOKEN, LOG_LEVEL: 'debug' },
    });
    github.webhookUrl = `${t.url}/webhooks/gh-acme`;
  });
  afterAll(async () => {
    await t?.close();
    await github?.stop();
    await db?.drop();
  });

  const reconcile = () => t.app.get(ReconciliationScheduler).runOnce();
  const lastRun = async () => (await db.query(`SELECT * FROM reconciliation_runs ORDER BY id DESC LIMIT 1`))[0];

  it('redelivers only the failed deliveries the inbox lacks; they come back signed with the same delivery id', async () => {
    // Delivered and accepted.
    const ok = signGithub({ ref: 'refs/heads/main' }, SECRET, 'g-ok');
    expect((await request(t.url).post('/webhooks/gh-acme').set(ok.headers).send(ok.body)).body).toMatchObject({ status: 'accepted' });
    github.addDelivery('g-ok', 200, { ref: 'refs/heads/main' }, 'push', 300);
    // Failed once, then GitHub's own retry got through: in the inbox, nothing to do.
    github.addDelivery('g-retried', 502, { ref: 'b' }, 'push', 290);
    const retried = signGithub({ ref: 'b' }, SECRET, 'g-retried');
    await request(t.url).post('/webhooks/gh-acme').set(retried.headers).send(retried.body);
    github.addDelivery('g-retried', 200, { ref: 'b' }, 'push', 280);
    // Failed and never seen: lost, on the second page.
    github.addDelivery('g-lost', 502, { ref: 'refs/heads/lost' }, 'push', 270);
    for (let i = 0; i < 120; i++) github.addDelivery(`g-fill-${i}`, 200, {}, 'push', 200 - i);
    // The first page leaves no calls in the window: the second waits for the reset.
    github.rateLimit = { remaining: 1, resetAt: Math.floor(Date.now() / 1000) + 2 };

    expect(await reconcile()).toBe(1);

    const lost = github.deliveries.find((d) => d.guid === 'g-lost' && !d.redelivery)!;
    expect(github.redeliveries).toEqual([lost.id]);
    const lists = github.calls.filter((c) => c.method === 'GET');
    expect(lists).toHaveLength(2);
    expect(lists[1].query.get('cursor')).toEqual(expect.any(String));
    // x-ratelimit-remaining 0: the next call waited for x-ratelimit-reset.
    expect(lists[1].at).toBeGreaterThanOrEqual((github.rateLimit.resetAt - 1) * 1000);
    await waitFor('the redelivery', async () => (await db.query(`SELECT 1 FROM webhook_inbox WHERE event_id = 'g-lost'`)).length === 1);
    const [row] = await db.query(`SELECT source_scope, verified_with, event_type FROM webhook_inbox WHERE event_id = 'g-lost'`);
    expect(row).toEqual({ source_scope: `acme:github:${HOOK}`, verified_with: 'current', event_type: 'push' });
    expect(await lastRun()).toMatchObject({ status: 'succeeded', found_missing: 1, api_calls: 3 });

    // The next run finds the redelivery in the inbox: nothing asked again.
    t.clock.advance(61_000);
    github.rateLimit = { remaining: 5000, resetAt: Math.floor(Date.now() / 1000) + 3600 };
    expect(await reconcile()).toBe(1);
    expect(github.redeliveries).toHaveLength(1);
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE event_id = 'g-lost'`)).toEqual([{ n: 1 }]);
  });

  it('a failed delivery an earlier version stored under the endpoint (before expect.hookId was added) is not asked for again', async () => {
    const old = signGithub({ ref: 'refs/heads/old' }, SECRET, 'g-old-scope');
    expect((await request(t.url).post('/webhooks/gh-acme').set(old.headers).send(old.body)).body).toMatchObject({ status: 'accepted' });
    // As a version before 2026-12-07 stored it while the endpoint had no expect: under the endpoint.
    await db.query(`UPDATE webhook_inbox SET source_scope = 'acme:github:endpoint-gh-acme' WHERE event_id = 'g-old-scope'`);
    github.addDelivery('g-old-scope', 502, { ref: 'refs/heads/old' }, 'push', 150);
    const asked = github.redeliveries.length;
    t.clock.advance(61_000);
    expect(await reconcile()).toBe(1);
    expect(github.redeliveries).toHaveLength(asked);
    // And a redelivery of it by hand is a duplicate.
    expect((await request(t.url).post('/webhooks/gh-acme').set(old.headers).send(old.body)).body).toMatchObject({ status: 'duplicate' });
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE event_id = 'g-old-scope'`)).toEqual([{ n: 1 }]);
  });

  it('a dry run counts the failed deliveries the inbox lacks and asks GitHub for none of them', async () => {
    github.addDelivery('g-dry', 502, { ref: 'refs/heads/dry' }, 'push', 100);
    const asked = github.redeliveries.length;
    await t.app.get(ReconciliationService).request(OPERATOR, { endpoint: 'gh-acme', dryRun: true, reason: 'count first' });
    expect(await reconcile()).toBe(1);
    expect(await lastRun()).toMatchObject({ status: 'succeeded', dry_run: true, found_missing: 1 });
    expect(github.redeliveries).toHaveLength(asked);
    expect(await db.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE event_id = 'g-dry'`)).toEqual([{ n: 0 }]);
  });

  it('a bad token: the run failed with one line in its record, the token never logged', async () => {
    t.clock.advance(61_000);
    github.tokens.clear();
    try {
      expect(await reconcile()).toBe(1);
    } finally {
      github.tokens.add(TOKEN);
    }
    expect(await lastRun()).toMatchObject({ status: 'failed', error: 'credentials_refused (401)' });
    expect(t.logs.text()).not.toContain(TOKEN);
  });

  it('a redelivery GitHub refuses (422) is counted, and the run goes on to the other failed deliveries', async () => {
    // It failed the run there, and every run after it at the same delivery: the older ones were never asked for.
    const redeliveriesBefore = github.redeliveries.length;
    const behind = github.addDelivery('g-behind', 502, { ref: 'refs/heads/behind' }, 'push', 30);
    const refused = github.addDelivery('g-refused', 502, { ref: 'refs/heads/refused' }, 'push', 20);
    const fake = github as unknown as { handle: (req: IncomingMessage, res: ServerResponse) => Promise<void> };
    const handle = fake.handle.bind(github);
    const requested = () =>
      Number(/^reconciled_events_total\{endpoint="gh-acme",outcome="redelivery_requested",reason=""\} (\d+)$/m.exec(metricsText)?.[1] ?? 0);
    let metricsText = (await request(t.url).get('/metrics')).text;
    const requestedBefore = requested();
    fake.handle = async (req, res) => {
      if (req.method === 'POST' && req.url?.includes(`/deliveries/${refused.id}/attempts`)) {
        res.writeHead(422, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Validation Failed' }));
        return;
      }
      return handle(req, res);
    };
    try {
      t.clock.advance(61_000);
      expect(await reconcile()).toBe(1);
    } finally {
      fake.handle = handle;
    }
    expect(await lastRun()).toMatchObject({ status: 'succeeded', outcomes: { 'refused:redelivery_refused_422': 1 } });
    const metrics = (await request(t.url).get('/metrics')).text;
    expect(metrics).toMatch(
      /^reconciled_events_total\{endpoint="gh-acme",outcome="redelivery_refused",reason="redelivery_refused_422"\} 1$/m,
    );
    metricsText = metrics;
    // Only what GitHub took counts as requested (the refused one did).
    expect(requested() - requestedBefore).toBe(github.redeliveries.length - redeliveriesBefore);
    expect(github.redeliveries).toContain(behind.id);
    await waitFor(
      'g-behind redelivered into the inbox',
      async () => (await db.query(`SELECT 1 FROM webhook_inbox WHERE event_id = 'g-behind'`)).length === 1,
    );
  });

  it('a delivery our endpoint refused for its content when redelivered is not asked for again; one refused for its signature is', async () => {
    // A JSON string holding \u0000, which the inbox cannot store: 400 unsupported_json, for every copy of these bytes.
    const bad = github.addDelivery('g-nul', 502, { ref: 'refs/heads/a\u0000b' }, 'push', 10);
    const unsigned = github.addDelivery('g-unsigned', 502, { ref: 'refs/heads/unsigned' }, 'push', 9);
    const asksFor = (guid: string) => github.redeliveries.filter((id) => github.deliveries.find((d) => d.id === id)!.guid === guid).length;
    // The hook's secret is being rotated: GitHub's redeliveries of g-unsigned are refused with a 401.
    github.signedWrongly.add('g-unsigned');
    try {
      t.clock.advance(61_000);
      expect(await reconcile()).toBe(1);
      expect(github.redeliveries).toEqual(expect.arrayContaining([bad.id, unsigned.id]));
      await waitFor('both redeliveries refused and listed', async () =>
        ['g-nul', 'g-unsigned'].every((guid) => github.deliveries.some((d) => d.guid === guid && d.redelivery)),
      );
      expect(
        github.deliveries
          .filter((d) => d.redelivery && ['g-nul', 'g-unsigned'].includes(d.guid))
          .map((d) => d.status_code)
          .sort(),
      ).toEqual([400, 401]);

      // Each later run: g-nul is counted as refused again, not asked for; g-unsigned is asked for again.
      t.clock.advance(61_000);
      expect(await reconcile()).toBe(1);
      expect(asksFor('g-nul')).toBe(1);
      expect(asksFor('g-unsigned')).toBe(2);
      expect(await lastRun()).toMatchObject({ status: 'succeeded', outcomes: { 'refused:rejected_again_400': 1 } });
      expect((await request(t.url).get('/metrics')).text).toMatch(
        /^reconciled_events_total\{endpoint="gh-acme",outcome="redelivery_refused",reason="rejected_again_400"\} 1$/m,
      );
    } finally {
      github.signedWrongly.delete('g-unsigned');
    }
    // With the secret right again, the next run brings g-unsigned in; g-nul still is not asked for.
    await waitFor(
      'the second refused redelivery listed',
      async () => github.deliveries.filter((d) => d.guid === 'g-unsigned').length === 3,
    );
    t.clock.advance(61_000);
    expect(await reconcile()).toBe(1);
    await waitFor(
      'g-unsigned redelivered into the inbox',
      async () => (await db.query(`SELECT 1 FROM webhook_inbox WHERE event_id = 'g-unsigned'`)).length === 1,
    );
    expect(asksFor('g-nul')).toBe(1);
  });

  it.each([
    [{ owner: 'acme' }, { hookId: HOOK }, /api\.reconcile: GitHub reconciliation needs api\.owner and api\.repo, or api\.org/],
    [{ org: 'acme', repo: 'shop' }, { hookId: HOOK }, /api\.owner and api\.repo, or api\.org \(not both\)/],
    [{ org: 'acme' }, undefined, /needs expect\.hookId/],
  ])('refuses to start with api %j and expect %j', async (where, expect_, pattern) => {
    const start = startTestApp({
      databaseUrl: db.url,
      endpoints: [
        {
          id: 'gh-bad',
          provider: 'github',
          tenantId: 'acme',
          secrets: [{ label: 'current', value: SECRET }],
          ...(expect_ && { expect: expect_ }),
          api: { env: 'GH_TOKEN', ...where, reconcile: { enabled: true } },
        },
      ],
      env: { GH_TOKEN: TOKEN },
    });
    await expect(start).rejects.toThrow(pattern);
  });
});
