import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';
import request from 'supertest';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { OPERATOR_TOKEN, startTestApp, TestApp, VIEWER_TOKEN } from '../support/test-app';
import { signStripe } from '../support/signers';
import { createOrder, ENDPOINTS, inboxRow, paymentIntentEvent, postStripe, STRIPE_SECRET } from '../inbox/worker-fixtures';
import { buildConsole } from './console-build';
import { CHROMIUM, FLAGS, haveChromium, SHOTS } from './chromium';

/** An operator limited to tenant acme; globex is the other tenant it must never see. */
const ACME_TOKEN = 'acme-operator-token-0123456789';
const GLOBEX = { id: 'stripe-globex', provider: 'stripe', tenantId: 'globex', secrets: [{ label: 'current', value: STRIPE_SECRET }] };

if (!haveChromium && process.env.CI !== 'true') {
  process.stderr.write(`console browser tests skipped: ${CHROMIUM} not found (apt-get install chromium; .ci/run installs it)\n`);
}

(haveChromium ? describe : describe.skip)('console in Chromium: the operator walk', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let t: TestApp;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  const policyViolations: string[] = [];

  beforeAll(async () => {
    buildConsole();
    mkdirSync(SHOTS, { recursive: true });
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    t = await startTestApp({
      databaseUrl: db.url,
      endpoints: [...ENDPOINTS, GLOBEX],
      env: {
        ADMIN_TOKENS: `ops:operator:${OPERATOR_TOKEN},view:viewer:${VIEWER_TOKEN},acme-ops:operator@acme:${ACME_TOKEN}`,
        ROLES: 'api,worker,relay',
        ERP_URL: erp.url,
        EMAIL_URL: email.sendUrl,
        WORKER_MAX_ATTEMPTS: '1',
        WORKER_POLL_MS: '100',
        RELAY_POLL_MS: '100',
      },
    });
    // A fresh profile every run: nothing remembered between runs.
    profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1360, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) policyViolations.push(m.text());
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await t?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  afterEach(() => expect(policyViolations).toEqual([]));

  async function waitForStatus(eventId: string, status: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while ((await inboxRow(db, eventId))?.status !== status) {
      if (Date.now() > deadline) throw new Error(`event not ${status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function signIn(token: string): Promise<void> {
    // A new tab's state: no token kept from an earlier sign-in.
    await page.goto(`${t.url}/console/`);
    await page.evaluate('sessionStorage.clear()');
    await page.reload();
    await page.fill('input[name=token]', token);
    await page.click('[data-test=sign-in]');
  }

  /** Clicks Refresh until the page shows what we wait for (the worker and relay run on their own). */
  async function refreshUntil(ok: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await page.click('[data-test=refresh]');
      await page.waitForTimeout(200);
    }
  }

  it('an operator finds a quarantined event, reads its timeline, replays it with a reason, and sees it done and delivered', async () => {
    // An event for an order the shop has not created yet: one attempt (WORKER_MAX_ATTEMPTS=1), quarantined.
    const event = paymentIntentEvent('payment_intent.succeeded', { orderId: 'ui-1', amount: 4200 });
    await postStripe(t, event);
    const deadline = Date.now() + 20_000;
    while ((await inboxRow(db, event.id as string)).status !== 'quarantined') {
      if (Date.now() > deadline) throw new Error('event not quarantined');
      await new Promise((r) => setTimeout(r, 50));
    }
    const { id } = await inboxRow(db, event.id as string);
    await createOrder(t, 'ui-1', 4200, 'eur');

    await signIn(OPERATOR_TOKEN);
    await page.waitForSelector('[data-test=quarantined]');
    expect(await page.textContent('[data-test=who]')).toContain('operator');
    expect(await page.textContent('[data-test=quarantined]')).toBe('1');
    await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });

    await page.click('[data-test=quarantined]');
    await page.waitForSelector('[data-test=inbox-row][data-status=quarantined]');
    expect(await page.locator('[data-test=inbox-row]').count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'inbox.png'), fullPage: true });

    await page.click(`[data-test=inbox-row] a[href="#/inbox/${id}"]`);
    await page.waitForSelector('[data-test=timeline-entry][data-kind=attempt]');
    expect(await page.textContent('[data-test=status-reason]')).toBe('max_attempts');
    const attempt = await page.textContent('[data-test=timeline-entry][data-kind=attempt]');
    expect(attempt).toContain('Processing attempt 1: quarantined');
    expect(attempt).toContain('order_not_found');
    expect(await page.textContent('[data-test=payload]')).toContain(event.id as string);
    await page.screenshot({ path: join(SHOTS, 'event-quarantined.png'), fullPage: true });

    await page.click('[data-test=replay]');
    // No reason, no replay: the confirm button stays disabled.
    expect(await page.isDisabled('[data-test=replay-confirm]')).toBe(true);
    await page.fill('[data-test=replay-form] input[name=reason]', 'order ui-1 now exists');
    await page.click('[data-test=replay-confirm]');

    await refreshUntil(
      async () =>
        (await page.locator('[data-test=operation][data-status=delivered]').count()) === 2 &&
        (await page.locator('h1 .status-done').count()) === 1,
      'the event done and both operations delivered',
    );
    const story = await page.locator('[data-test=timeline-entry]').allTextContents();
    expect(story.some((s) => s.includes('ops (operator): inbox.replay') && s.includes('order ui-1 now exists'))).toBe(true);
    expect(story.some((s) => s.includes('Order acme/ui-1: awaiting_payment → paid'))).toBe(true);
    expect(story.filter((s) => s.includes('Delivery attempt 1') && s.includes(': delivered'))).toHaveLength(2);
    expect(erp.effects.has('erp:order-paid:acme:ui-1')).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'event-done.png'), fullPage: true });
  }, 120_000);

  it('the outbox, orders and audit pages show what happened', async () => {
    await page.click('nav >> text=Outbox');
    await page.waitForSelector('[data-test=outbox-row]');
    expect(await page.locator('[data-test=outbox-row][data-status=delivered]').count()).toBe(2);
    await page.screenshot({ path: join(SHOTS, 'outbox.png'), fullPage: true });

    await page.click('nav >> text=Orders');
    await page.fill('input[name=tenant]', 'acme');
    await page.fill('input[name=id]', 'ui-1');
    await page.click('[data-test=order-lookup]');
    await page.waitForSelector('[data-test=order]');
    expect(await page.textContent('[data-test=order]')).toContain('paid');
    await page.screenshot({ path: join(SHOTS, 'orders.png'), fullPage: true });
    await page.fill('input[name=id]', 'no-such-order');
    await page.click('[data-test=order-lookup]');
    // An API error is shown as the API's reason, never a blank page.
    expect(await (await page.waitForSelector('[data-test=error]')).textContent()).toContain('order_not_found');

    await page.click('nav >> text=Audit');
    await page.waitForSelector('[data-test=audit-row]');
    expect(await page.textContent('[data-test=audit-list]')).toContain('order ui-1 now exists');
    await page.screenshot({ path: join(SHOTS, 'audit.png'), fullPage: true });
  }, 120_000);

  it('a viewer sees the timeline but no payload and no replay button', async () => {
    const { id } = (await db.query(`SELECT id FROM webhook_inbox ORDER BY id LIMIT 1`))[0];
    await signIn(VIEWER_TOKEN);
    await page.waitForSelector('[data-test=who]');
    expect(await page.textContent('[data-test=who]')).toContain('viewer');
    await page.goto(`${t.url}/console/#/inbox/${id}`);
    await page.waitForSelector('[data-test=timeline-entry]');
    expect(await page.locator('[data-test=payload]').count()).toBe(0);
    expect(await page.locator('[data-test=replay]').count()).toBe(0);
    expect(await page.locator('[data-test=event-actions]').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'event-viewer.png'), fullPage: true });
    await page.click('nav >> text=Inbox');
    await page.waitForSelector('[data-test=inbox-row]');
    expect(await page.locator('[data-test=bulk-replay]').count()).toBe(0);
  }, 120_000);

  it('a bad token gets a clear message and no console', async () => {
    await signIn('not-a-real-token');
    const message = await (await page.waitForSelector('[data-test=sign-in-error]')).textContent();
    expect(message).toBe('This token was not accepted (invalid_token). Check it and try again.');
    expect(await page.locator('[data-test=who]').count()).toBe(0);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'sign-in-error.png') });
  }, 60_000);

  it("a token limited to acme signs in, walks the overview, inbox and outbox, and sees none of globex's rows", async () => {
    // A globex event for an order that does not exist: quarantined, the only quarantined event of any tenant.
    const globexEvent = paymentIntentEvent('payment_intent.succeeded', { orderId: 'gx-1' });
    const signed = signStripe(globexEvent, STRIPE_SECRET, Math.floor(t.clock.now().getTime() / 1000));
    expect((await request(t.url).post('/webhooks/stripe-globex').set(signed.headers).send(signed.body)).status).toBe(200);
    await waitForStatus(globexEvent.id as string, 'quarantined');
    const globexId = (await inboxRow(db, globexEvent.id as string)).id;
    const acmeIds = (await db.query(`SELECT id::text FROM webhook_inbox WHERE tenant_id = 'acme' ORDER BY id`)).map(
      (r: { id: string }) => r.id,
    );

    await signIn(ACME_TOKEN);
    await page.waitForSelector('[data-test=quarantined], [data-test=sign-in-error]');
    expect(await page.locator('[data-test=sign-in-error]').allTextContents()).toEqual([]);
    expect(await page.textContent('[data-test=who]')).toContain('acme-ops · operator · tenants acme');
    // The token is kept for the tab: the console did not sign it out.
    expect(await page.evaluate('sessionStorage.length')).toBe(1);
    expect(await page.textContent('[data-test=quarantined]')).toBe('0');
    // The audit log is not limited by tenant, so the console does not offer it to this token.
    expect(await page.locator('nav >> text=Audit').count()).toBe(0);

    await page.click('nav >> text=Inbox');
    await page.waitForSelector('[data-test=inbox-row]');
    expect(await page.locator('[data-test=inbox-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tenant')))).toEqual(
      acmeIds.map(() => 'acme'),
    );
    await page.goto(`${t.url}/console/#/inbox/${globexId}`);
    expect(await (await page.waitForSelector('[data-test=error]')).textContent()).toContain('inbox_event_not_found');
    await page.goto(`${t.url}/console/#/inbox/${acmeIds[0]}`);
    await page.waitForSelector('[data-test=timeline-entry]');
    // The payload is its own request: wait for it rather than count while it is in flight.
    await page.waitForSelector('[data-test=payload]');
    expect(await page.locator('[data-test=payload]').count()).toBe(1);

    await page.click('nav >> text=Outbox');
    await page.waitForSelector('[data-test=outbox-row]');
    const tenants = await page.locator('[data-test=outbox-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tenant')));
    expect(tenants.length).toBeGreaterThan(0);
    expect(new Set(tenants)).toEqual(new Set(['acme']));
  }, 120_000);
});

if (!haveChromium && process.env.CI === 'true') {
  describe('console in Chromium', () => {
    it('needs Chromium in CI', () => {
      throw new Error(`${CHROMIUM} not found: CI must install it (apt-get install -y chromium)`);
    });
  });
}
