/**
 * Debian's Chromium, headless, driven by puppeteer-core (which downloads no browser): the console's pages
 * as a user sees them. Screenshots go to test-output/console/. The pages' console errors and failed
 * requests (a CSP refusal among them) are collected, so a test can assert there were none.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
export const SCREENSHOTS = join(import.meta.dirname, '..', '..', 'test-output', 'console');

export interface BrowserPage {
  page: Page;
  /** Console errors and CSP violations the page reported. */
  problems: string[];
  screenshot(name: string): Promise<string>;
}

let browser: Browser | undefined;

export async function openPage(url: string): Promise<BrowserPage> {
  if (!CHROMIUM) throw new Error('Chromium is not installed (apt-get install chromium)');
  browser ??= await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // As root (CI), Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--window-size=1280,900'],
    defaultViewport: { width: 1280, height: 900 },
  });
  const page = await browser.newPage();
  // The page in front: a page behind another gets no animation frames, which the editor waits for.
  await page.bringToFront();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(url, { waitUntil: 'networkidle0' });
  return {
    page,
    problems,
    async screenshot(name) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      const path = join(SCREENSHOTS, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
  };
}

/** Closes the browser; one that does not close within 5 s is killed (a test that failed mid-page). */
export async function closeBrowser(): Promise<void> {
  const b = browser;
  browser = undefined;
  if (!b) return;
  const closed = await Promise.race([
    b.close().then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
  ]);
  if (!closed) b.process()?.kill('SIGKILL');
}
