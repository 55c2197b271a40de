import { IncomingMessage, ServerResponse } from 'node:http';
import { ReconciliationScheduler } from '../../src/reconciliation/reconciliation.scheduler';
import { FakeGithubApi } from '../support/fake-github-api';
import { startTestApp, TestApp } from '../support/test-app';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { waitFor } from '../support/wait-for';

const TOKEN = 'ghp_refused0123456789SECRETTOKEN';
const SECRET = 'gh-webhook-secret';
const HOOK = '123';

/**
 * GitHub answers one redelivery request with a 4xx (422: a delivery it will not send again). The
 * run failed there before storing its page, and every run after it started from the newest page and
 * failed at the same delivery: the older failed deliveries were never asked for until GitHub forgot them.
 */
describe('reconciliation: a redelivery GitHub refuses', () => {
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
      env: { GH_TOKEN: TOKEN },
    });
    github.webhookUrl = `${t.url}/webhooks/gh-acme`;
  });
  afterAll(async () => {
    await t?.close();
    await github?.stop();
    await db?.drop();
  });

  it('is counted in the run, which goes on to the other failed deliveries and succeeds', async () => {
    const lost = github.addDelivery('g-lost', 502, { ref: 'refs/heads/lost' }, 'push', 300);
    const refused = github.addDelivery('g-refused', 502, { ref: 'refs/heads/refused' }, 'push', 200);
    const fake = github as unknown as { handle: (req: IncomingMessage, res: ServerResponse) => Promise<void> };
    const handle = fake.handle.bind(github);
    fake.handle = async (req, res) => {
      if (req.method === 'POST' && req.url?.includes(`/deliveries/${refused.id}/attempts`)) {
        res.writeHead(422, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'Validation Failed', status: '422' }));
        return;
      }
      return handle(req, res);
    };
    t.clock.advance(61_000);
    await t.app.get(ReconciliationScheduler).runOnce();
    const [run] = await db.query(`SELECT status, found_missing, outcomes FROM reconciliation_runs ORDER BY id DESC LIMIT 1`);
    expect(run).toMatchObject({ status: 'succeeded', found_missing: 2, outcomes: { 'refused:redelivery_refused_422': 1 } });
    expect(github.redeliveries).toContain(lost.id);
    await waitFor(
      'g-lost redelivered into the inbox',
      async () => (await db.query(`SELECT 1 FROM webhook_inbox WHERE event_id = 'g-lost'`)).length === 1,
    );
  });
});
