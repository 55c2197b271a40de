import { join } from 'node:path';
import { runTsChild } from '../support/child-process';
import { TestDatabase } from '../support/test-database';
import { TestApp, useTestApp } from '../support/test-app';

const CLI = join(__dirname, '..', '..', 'src', 'cli', 'cli.ts');

/** `npm run cli -- send` signs with the endpoint's secret the way the provider does, through the real route. */
describe('cli send', () => {
  let db: TestDatabase;
  let t: TestApp;
  useTestApp(
    {
      endpoints: [{ id: 'slack-demo', provider: 'slack', tenantId: 'demo', secrets: [{ label: 'app', value: 'slack-cli-secret' }] }],
    },
    (started) => ({ db, t } = started),
  );

  it('sends a signed Slack event that is accepted with its type', async () => {
    const result = await runTsChild(CLI, ['send', 'slack-demo', 'reaction_added', '--event-id', 'EvCLI1', '--url', t.url], {
      NODE_ENV: 'test',
      WEBHOOK_ENDPOINTS_FILE: t.config.endpointsFile,
    });
    expect(result.output).toContain('200 {"status":"accepted","eventId":"EvCLI1"}');
    expect(result.code).toBe(0);
    expect(await db.query('SELECT event_type FROM webhook_inbox')).toEqual([{ event_type: 'reaction_added' }]);
  }, 30_000);
});
