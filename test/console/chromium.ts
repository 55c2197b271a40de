import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';

/** Debian's Chromium (apt-get install chromium); never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';
export const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** CONSOLE_SCREENSHOTS=1 refreshes the README's pictures in docs/console/; otherwise they go to a temp dir. */
export const SHOTS = process.env.CONSOLE_SCREENSHOTS
  ? resolve(__dirname, '../../docs/console')
  : mkdtempSync(join(tmpdir(), 'console-shots-'));
export const haveChromium = existsSync(CHROMIUM);

/** A fresh profile every run (nothing remembered between runs); CSP violations are collected into `policyViolations`. */
export async function launchConsoleBrowser(
  policyViolations: string[],
): Promise<{ context: BrowserContext; page: Page; close: () => Promise<void> }> {
  mkdirSync(SHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1360, height: 900 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) policyViolations.push(m.text());
  });
  return {
    context,
    page,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A new tab's state: no token kept from an earlier sign-in. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console/`);
  await page.evaluate('sessionStorage.clear()');
  await page.reload();
  await page.fill('input[name=token]', token);
  await page.click('[data-test=sign-in]');
}
