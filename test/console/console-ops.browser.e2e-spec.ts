import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ActivityService } from '../../src/activity/activity.service';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { ENDPOINTS, STRIPE_SECRET } from '../inbox/worker-fixtures';
import { buildConsole } from './console-build';
import { CHROMIUM, haveChromium, launchConsoleBrowser, SHOTS, signIn } from './chromium';

const ACME_TOKEN = 'acme-operator-token-0123456789';
/** Reconcilable (a provider API); no instance has the maintenance role, so a requested run waits. */
const RECONCILED = {
  id: 'stripe-recon',
  provider: 'stripe',
  tenantId: 'acme',
  secrets: [{ label: 'current', value: STRIPE_SECRET }],
  api: {
    env: 'STRIPE_API_KEY_RECON',
    baseUrl: 'http://127.0.0.1:9',
    reconcile: { enabled: true, intervalSeconds: 3600, lookbackHours: 72 },
  },
};

/**
 * An hour of traffic as a bench run leaves it, written with its timestamps: about 600
 * events a minute with a slow swell, each done 0.2 s after acceptance, one in 997
 * quarantined, one ERP delivery each, failing for ten minutes (an ERP outage) and
 * delivered after it; the backlog the maintenance role would have sampled each minute.
 */
async function anHourOfTraffic(db: TestDatabase): Promise<void> {
  await db.query(`
    INSERT INTO webhook_inbox (source_scope, event_id, tenant_id, provider, endpoint_id, event_type, payload_sha256, verified_with, status, received_at, completed_at)
    SELECT 'stripe-acme', 'bench_' || g, 'acme', 'stripe', 'stripe-acme', 'payment_intent.succeeded', repeat('0', 64), 'current',
           CASE WHEN g % 997 = 0 THEN 'quarantined' ELSE 'done' END, at, at + interval '200 ms'
      FROM (SELECT g, date_trunc('minute', now()) - interval '60 minutes' + g * interval '100 ms' AS at
              FROM generate_series(1, 36000) g
             WHERE random() < 0.75 + 0.25 * sin(g / 4000.0)) s`);
  await db.query(`
    INSERT INTO webhook_inbox_attempts (inbox_id, attempt, at, lease, outcome)
    SELECT id, 1, completed_at, 'bench', status FROM webhook_inbox WHERE event_id LIKE 'bench_%'`);
  await db.query(`
    INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, created_at, delivered_at, source_event_id)
    SELECT 'erp:bench:' || id, 'erp', 'order_paid', 'acme', '{}', 'delivered', completed_at, completed_at, id
      FROM webhook_inbox WHERE event_id LIKE 'bench_%' AND status = 'done'`);
  // The outage: minutes 35 to 45 of the hour; each entry of it failed once a minute, then went through.
  await db.query(`
    WITH w AS (SELECT date_trunc('minute', now()) - interval '25 minutes' AS down, date_trunc('minute', now()) - interval '15 minutes' AS up)
    INSERT INTO outbox_attempts (outbox_id, attempt, at, lease, outcome, status_code)
    SELECT o.id, 1, CASE WHEN o.created_at BETWEEN w.down AND w.up THEN o.created_at + interval '1 second' ELSE o.created_at + interval '300 ms' END,
           'bench', CASE WHEN o.created_at BETWEEN w.down AND w.up THEN 'retry' ELSE 'delivered' END,
           CASE WHEN o.created_at BETWEEN w.down AND w.up THEN 503 ELSE 200 END
      FROM outbox o, w WHERE o.operation_key LIKE 'erp:bench:%'
    UNION ALL
    SELECT o.id, 2, w.up + (o.created_at - w.down) / 20 + interval '5 seconds', 'bench', 'delivered', 200
      FROM outbox o, w WHERE o.operation_key LIKE 'erp:bench:%' AND o.created_at BETWEEN w.down AND w.up`);
  await db.query(`
    INSERT INTO activity_minutes (minute, kind, scope, tenant_id, backlog, oldest_pending_age_seconds)
    SELECT m, 'endpoint', 'stripe-acme', 'acme', 3 + (random() * 8)::int, 1 FROM generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()) - interval '1 minute', interval '1 minute') m
    UNION ALL
    SELECT m, 'destination', 'erp', 'acme',
           CASE WHEN m BETWEEN now() - interval '25 minutes' AND now() - interval '15 minutes' THEN (extract(epoch FROM m - (now() - interval '25 minutes')) * 10)::int
                WHEN m BETWEEN now() - interval '15 minutes' AND now() - interval '12 minutes' THEN 1500 - (extract(epoch FROM m - (now() - interval '15 minutes')) * 8)::int
                ELSE 2 END,
           CASE WHEN m BETWEEN now() - interval '25 minutes' AND now() - interval '12 minutes' THEN extract(epoch FROM m - (now() - interval '25 minutes'))::int ELSE 1 END
      FROM generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()) - interval '1 minute', interval '1 minute') m
    ON CONFLICT DO NOTHING`);
}

/** The ERP's circuit open (as the relay leaves it after failures), one entry unresolved and the next of its order held behind it. */
async function erpDown(db: TestDatabase): Promise<{ unresolved: string; held: string }> {
  await db.query(`
    INSERT INTO outbox_destinations (destination, circuit, failures, retry_at, last_error, changed_at)
    VALUES ('erp', 'open', 5, now() + interval '10 minutes', 'http_503: Service Unavailable', now() - interval '4 minutes')
    ON CONFLICT (destination) DO UPDATE SET circuit = 'open', failures = 5, retry_at = excluded.retry_at, last_error = excluded.last_error, changed_at = excluded.changed_at`);
  const [unresolved] = await db.query(
    `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, attempts, last_error, last_status_code, outcome_unknown, aggregate, aggregate_seq)
     VALUES ('erp:order-paid:acme:o-77', 'erp', 'order_paid', 'acme', '{}', 'unresolved', 12, 'http_503: Service Unavailable', 503, true, 'order:o-77', 1) RETURNING id::text`,
  );
  const [held] = await db.query(
    `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, status, aggregate, aggregate_seq)
     VALUES ('erp:order-refunded:acme:o-77', 'erp', 'order_refunded', 'acme', '{}', 'pending', 'order:o-77', 2) RETURNING id::text`,
  );
  return { unresolved: unresolved.id, held: held.id };
}

(haveChromium ? describe : describe.skip)('console in Chromium: trends, destinations, reconciliation, erasure', () => {
  let db: TestDatabase;
  let t: TestApp;
  let page: Page;
  let closeBrowser: () => Promise<void>;
  const policyViolations: string[] = [];

  beforeAll(async () => {
    buildConsole();
    db = await createTestDatabase();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [...ENDPOINTS, RECONCILED],
      env: {
        ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN},acme-ops:operator@acme:${ACME_TOKEN}`,
        STRIPE_API_KEY_RECON: 'sk_test_console_recon_0123456789KEY',
      },
    });
    ({ page, close: closeBrowser } = await launchConsoleBrowser(policyViolations));
  }, 120_000);

  afterAll(async () => {
    await closeBrowser?.();
    await t?.close();
    await db?.drop();
  });

  afterEach(() => expect(policyViolations).toEqual([]));

  it('the overview charts an hour of traffic, with a summary and a data table for each chart', async () => {
    await anHourOfTraffic(db);
    await t.app.get(ActivityService).runOnce();
    await signIn(page, t.url, OPERATOR_TOKEN);
    await page.waitForSelector('[data-test=chart-events] canvas');
    const summary = await page.textContent('[data-test=chart-events-summary]');
    expect(summary).toMatch(/^accepted: latest \d+(\.\d)?\/min, peak \d+\/min at \d\d:\d\d UTC, mean \d+(\.\d)?\/min\./);
    expect(await page.textContent('[data-test=chart-deliveries-summary]')).toMatch(/failed attempts: latest 0\/min, peak \d+\/min/);
    // The canvas is hidden from assistive technology; the table is reachable by keyboard.
    expect(await page.getAttribute('[data-test=chart-events] .chart-plot', 'aria-hidden')).toBe('true');
    await page.focus('[data-test=chart-events] summary');
    await page.keyboard.press('Enter');
    expect(await page.locator('[data-test=chart-events-table] tbody tr').count()).toBe(60);
    await page.keyboard.press('Enter');
    await page.screenshot({ path: join(SHOTS, 'overview-trends.png'), fullPage: true });

    await page.selectOption('select[name=window]', '24h');
    await page.locator('[data-test=chart-events-table] tbody tr').nth(143).waitFor({ state: 'attached' });
    expect(await page.locator('[data-test=chart-events-table] tbody tr').count()).toBe(144);
  }, 120_000);

  it('a token limited to a tenant charts only its tenants and is offered none of the cross-tenant pages', async () => {
    await db.query(
      `INSERT INTO activity_minutes (minute, kind, scope, tenant_id, accepted) VALUES (date_trunc('minute', now()) - interval '3 minutes', 'endpoint', 'stripe-globex', 'globex', 99999)`,
    );
    await signIn(page, t.url, ACME_TOKEN);
    await page.waitForSelector('[data-test=chart-events] canvas');
    expect(await page.locator('select[name=endpoint] option').allTextContents()).toEqual(['all', 'stripe-acme']);
    expect(await page.textContent('[data-test=chart-events-summary]')).not.toContain('99999');
    for (const label of ['Destinations', 'Reconciliation', 'Erasure']) expect(await page.locator(`nav >> text=${label}`).count()).toBe(0);
  }, 60_000);

  it('a destination with its circuit open: its held entry names the entry it waits for, and the operator resolves that one with a reason', async () => {
    const { unresolved, held } = await erpDown(db);
    await signIn(page, t.url, OPERATOR_TOKEN);
    await page.click('nav >> text=Destinations');
    await page.waitForSelector('[data-test=destination-row][data-name=erp]');
    expect(await page.getAttribute('[data-test=destination-row][data-name=erp] [data-test=circuit]', 'data-state')).toBe('open');
    await page.click('[data-test=destination-row][data-name=erp] a');
    await page.waitForSelector('[data-test=destination-facts]');
    expect(await page.textContent('[data-test=last-error]')).toBe('http_503: Service Unavailable');
    expect(await page.getAttribute(`[data-test=entry-row][data-held-by="${unresolved}"]`, 'data-status')).toBe('pending');
    expect(await page.textContent('[data-test=held-by]')).toContain(`#${unresolved} (unresolved`);
    await page.screenshot({ path: join(SHOTS, 'destination-circuit-open.png'), fullPage: true });

    await page.click(`[data-test=resolve-${unresolved}]`);
    expect(await page.isDisabled(`[data-test=resolve-${unresolved}-confirm]`)).toBe(true);
    await page.fill(`[data-test=resolve-${unresolved}-form] input[name=reason]`, 'ERP support confirmed o-77 was booked');
    await page.click(`[data-test=resolve-${unresolved}-confirm]`);
    await page.waitForSelector(`[data-test=entry-row][data-held-by="${unresolved}"]`, { state: 'detached' });
    const [row] = await db.query(`SELECT status FROM outbox WHERE id = $1`, [unresolved]);
    expect(row.status).toBe('delivered');
    const [audit] = await db.query(`SELECT actor, reason FROM admin_audit WHERE target = $1`, [`outbox:${unresolved}`]);
    expect(audit).toEqual({ actor: 'ops', reason: 'ERP support confirmed o-77 was booked' });
    expect((await db.query(`SELECT status FROM outbox WHERE id = $1`, [held]))[0].status).toBe('pending');
  }, 60_000);

  it('reconciliation: a finished run with what it found, and a run requested with a reason', async () => {
    await db.query(
      `INSERT INTO reconciliation_runs (endpoint_id, requested_by, reason, advances_cursor, requested_at, started_at, finished_at, status, listed, found_missing, accepted, api_calls, outcomes)
       VALUES ('stripe-recon', 'schedule', 'interval', true, now() - interval '2 hours', now() - interval '2 hours', now() - interval '2 hours' + interval '4 seconds', 'succeeded', 240, 3, 2, 3, '{"duplicate": 1}'),
              ('stripe-recon', 'schedule', 'interval', true, now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour' + interval '1 second', 'failed', 0, 0, 0, 1, NULL)`,
    );
    await db.query(`UPDATE reconciliation_runs SET error = 'provider_unauthorized: the API refused the key' WHERE status = 'failed'`);
    await signIn(page, t.url, OPERATOR_TOKEN);
    await page.click('nav >> text=Reconciliation');
    await page.waitForSelector('[data-test=reconciliation-endpoint][data-endpoint=stripe-recon] [data-test=run-row]');
    expect(await page.locator('[data-test=run-row][data-status=succeeded] [data-test=found-missing]').textContent()).toBe('3');
    expect(await page.locator('[data-test=run-row][data-status=failed] [data-test=run-error]').textContent()).toContain(
      'provider_unauthorized',
    );

    await page.click('[data-test=run-stripe-recon]');
    expect(await page.isDisabled('[data-test=run-stripe-recon-confirm]')).toBe(true);
    await page.fill('[data-test=run-stripe-recon-form] input[name=reason]', 'key rotated, check the last day');
    await page.click('[data-test=run-stripe-recon-confirm]');
    expect(await (await page.waitForSelector('[data-test=run-requested]')).textContent()).toMatch(/^Run \d+ requested \(dry run\)/);
    await page.waitForSelector('[data-test=run-row][data-status=requested]');
    await page.screenshot({ path: join(SHOTS, 'reconciliation.png'), fullPage: true });
    const [run] = await db.query(`SELECT requested_by, reason, dry_run FROM reconciliation_runs WHERE status = 'requested'`);
    expect(run).toEqual({ requested_by: 'ops', reason: 'key rotated, check the last day', dry_run: true });
  }, 60_000);

  it('erasure: a dry run first, then the erasure only after an explicit confirmation; a viewer can do neither', async () => {
    await db.query(
      `INSERT INTO orders (tenant_id, id, status, total_minor, currency, customer_email) VALUES ('acme', 'o-erase', 'paid', 1000, 'eur', 'jane@example.com')`,
    );
    await signIn(page, t.url, OPERATOR_TOKEN);
    await page.click('nav >> text=Erasure');
    await page.fill('input[name=email]', 'jane@example.com');
    expect(await page.isDisabled('[data-test=erasure-dry-run]')).toBe(true);
    await page.fill('input[name=reason]', 'GDPR request #4411');
    await page.click('[data-test=erasure-dry-run]');
    await page.waitForSelector('[data-test=erasure-preview]');
    expect(await page.textContent('[data-test=erasure-preview] [data-test=count-orders]')).toBe('1');
    expect(await page.isDisabled('[data-test=erasure-run]')).toBe(true);
    expect((await db.query(`SELECT customer_email FROM orders WHERE id = 'o-erase'`))[0].customer_email).toBe('jane@example.com');
    await page.screenshot({ path: join(SHOTS, 'erasure-dry-run.png'), fullPage: true });

    // Editing the form discards the dry run: the erasure is never for a target nobody previewed.
    await page.fill('input[name=email]', 'jane2@example.com');
    expect(await page.locator('[data-test=erasure-preview]').count()).toBe(0);
    await page.fill('input[name=email]', 'jane@example.com');
    await page.click('[data-test=erasure-dry-run]');
    await page.check('[data-test=erasure-confirm]');
    await page.click('[data-test=erasure-run]');
    await page.waitForSelector('[data-test=erasure-result]');
    expect((await db.query(`SELECT customer_email FROM orders WHERE id = 'o-erase'`))[0].customer_email).not.toBe('jane@example.com');

    await signIn(page, t.url, VIEWER_TOKEN);
    await page.click('nav >> text=Erasure');
    await page.waitForSelector('[data-test=erasure-viewer]');
    expect(await page.locator('[data-test=erasure-dry-run]').count()).toBe(0);
    await page.click('nav >> text=Reconciliation');
    await page.waitForSelector('[data-test=run-row]');
    expect(await page.locator('[data-test=run-stripe-recon]').count()).toBe(0);
    await page.click('nav >> text=Destinations');
    await page.click('[data-test=destination-row][data-name=erp] a');
    await page.waitForSelector('[data-test=destination-entries]');
    expect(await page.locator('[data-test^=retry-], [data-test^=resolve-]').count()).toBe(0);
  }, 60_000);
});

if (!haveChromium && process.env.CI === 'true') {
  describe('console in Chromium (operations pages)', () => {
    it('needs Chromium in CI', () => {
      throw new Error(`${CHROMIUM} not found: CI must install it (apt-get install -y chromium)`);
    });
  });
}
