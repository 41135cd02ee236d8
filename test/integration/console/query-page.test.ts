/**
 * The local console in a real browser (Debian's Chromium, headless): served by the embedded service with a
 * strict CSP and no request leaving the host; sign-in with a token held for the tab only; a query whose
 * chart has one point per bucket and one series per group; an APL error marked at its line and column;
 * 100,000 rows that scroll, fetched a page at a time as the end comes near; the query shared through the URL, never the token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, openPage, type BrowserPage } from '../../support/browser.js';
import { ADMIN, startTestService, type TestService } from '../../support/helpers.js';

let svc: TestService;
let apiToken: string;
const MINUTE = 60_000;
// Whole minutes back from a minute boundary: buckets of one minute each hold a known count.
const base = Math.floor(Date.now() / MINUTE) * MINUTE - 30 * MINUTE;

beforeAll(async () => {
  svc = await startTestService();
  apiToken = await svc.apiToken();
  for (const name of ['web', 'many']) expect((await svc.call('POST', '/v2/datasets', { name })).status).toBe(200);
  // 10 minutes × 3 statuses, (minute + 1) × (1, 2, 3) events; then 100,000 events 10 ms apart for the table.
  const events: Record<string, unknown>[] = [];
  for (let m = 0; m < 10; m++)
    for (const [k, status] of [200, 404, 500].entries())
      for (let i = 0; i < (m + 1) * (k + 1); i++)
        events.push({
          _time: new Date(base + m * MINUTE + i * 1000).toISOString(),
          status,
          path: `/p/${i}`,
          meta: { m, tags: ['a', 'b'] },
        });
  const r = await svc.call('POST', '/v1/ingest/web', JSON.stringify(events), apiToken, {
    'content-type': 'application/json',
  });
  expect(r.status).toBe(200);
  const many = Array.from({ length: 100_000 }, (_, i) =>
    JSON.stringify({ _time: new Date(base + i * 10).toISOString(), n: i }),
  ).join('\n');
  const r2 = await svc.call('POST', '/v1/ingest/many', many, apiToken, { 'content-type': 'application/x-ndjson' });
  expect(r2.status).toBe(200);
});

afterAll(async () => {
  await closeBrowser();
  await svc?.close();
});

async function signIn(p: BrowserPage, token: string) {
  await p.page.type('input[name=token]', token);
  await p.page.click('button[type=submit]');
  await p.page.waitForSelector('[data-testid=apl-editor]');
}

async function query(p: BrowserPage, apl: string) {
  await p.page.click('[data-testid=apl-editor]');
  await p.page.keyboard.down('Control');
  await p.page.keyboard.press('a');
  await p.page.keyboard.up('Control');
  await p.page.keyboard.press('Backspace');
  // Typed as a user types, so completion pops up; Escape closes it before running.
  await p.page.keyboard.type(apl);
  await p.page.keyboard.press('Escape');
  await p.page.click('[data-testid=run]');
  await p.page.waitForFunction(
    () => {
      const s = document.querySelector('[data-testid=status]')?.textContent ?? '';
      return /rows matched|Cancelled/.test(s) || document.querySelector('[data-testid=error]') !== null;
    },
    { timeout: 30_000 },
  );
}

describe('the console', () => {
  it('is served at / with a strict CSP, and its files need no token', async () => {
    const page = await fetch(`${svc.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await page.text();
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${svc.url}${js}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    // Nothing from elsewhere: no absolute URL in the page, no CDN.
    expect(html).not.toMatch(/https?:\/\//);
    expect((await fetch(`${svc.url}/assets/nothing.js`)).status).toBe(404);
    // The API still wants its token.
    expect((await fetch(`${svc.url}/v2/datasets`)).status).toBe(401);
  });

  it('refuses a bad token at sign-in, and keeps a good one for the tab only', async () => {
    const p = await openPage(svc.url);
    await p.page.type('input[name=token]', 'xaat-not-a-token');
    await p.page.click('button[type=submit]');
    await p.page.waitForSelector('.sign-in .error');
    expect(await p.page.$eval('.sign-in .error', (e) => e.textContent)).toMatch(/invalid or expired token/);
    expect(await p.page.$eval('input[name=token]', (e) => (e as HTMLInputElement).type)).toBe('password');
    await p.page.$eval('input[name=token]', (e) => ((e as HTMLInputElement).value = ''));
    await p.screenshot('sign-in');
    await signIn(p, apiToken);
    const stored = await p.page.evaluate(() => ({
      session: Object.keys(sessionStorage),
      local: localStorage.length,
      cookie: document.cookie,
      url: location.href,
    }));
    expect(stored.session).toEqual(['ferry.token']);
    expect(stored.local).toBe(0);
    expect(stored.cookie).toBe('');
    expect(stored.url).not.toContain(apiToken);
    // The one refused request is the bad token's.
    expect(p.problems).toEqual(['Failed to load resource: the server responded with a status of 401 (Unauthorized)']);
    await p.page.close();
  });

  it('charts a query binned by time: one point per bucket, one series per group', async () => {
    const p = await openPage(svc.url);
    await signIn(p, apiToken);
    await query(p, "['web'] | summarize count() by bin(_time, 1m), status");
    await p.page.waitForSelector('[data-testid=chart] canvas');
    const chart = await p.page.$eval('[data-testid=chart]', (e) => ({ ...(e as HTMLElement).dataset }));
    expect(chart).toEqual({ testid: 'chart', points: '10', series: '3' });
    const legend = await p.page.$$eval('.u-legend .u-series th', (els) => els.map((e) => e.textContent?.trim()));
    expect(legend.slice(1).sort()).toEqual(['200', '404', '500']);
    expect(await p.page.$eval('[data-testid=status]', (e) => e.textContent)).toMatch(
      /^330 rows matched · 30 rows · \d+ ms$/,
    );
    // The address is a link to this query and range, without the token.
    const url = await p.page.evaluate(() => location.href);
    expect(decodeURIComponent(url.replace(/\+/g, ' '))).toContain(
      "['web'] | summarize count() by bin(_time, 1m), status",
    );
    expect(url).toContain('last=1h');
    expect(url).not.toContain(apiToken);
    await p.screenshot('query-chart');
    expect(p.problems).toEqual([]);
    await p.page.close();
  });

  it('marks an APL error at its line and column', async () => {
    const p = await openPage(svc.url);
    await signIn(p, apiToken);
    await query(p, "['web']\n| where status >= \n| take 5");
    const error = await p.page.$eval('[data-testid=error]', (e) => e.textContent ?? '');
    const m = /line (\d+), column (\d+)/.exec(error);
    expect(m).not.toBeNull();
    await p.page.waitForSelector('.cm-lintRange-error');
    // The marked text starts where the message says.
    const marked = await p.page.$eval('.cm-lintRange-error', (e) => {
      const line = e.closest('.cm-line')!;
      const lines = [...document.querySelectorAll('.cm-content .cm-line')];
      const range = document.createRange();
      range.setStart(line, 0);
      range.setEndBefore(e);
      return { line: lines.indexOf(line) + 1, column: range.toString().length + 1 };
    });
    expect(marked).toEqual({ line: Number(m![1]), column: Number(m![2]) });
    await p.screenshot('query-error');
    await p.page.close();
  });

  it('scrolls 100,000 rows, fetching pages as the end comes near and keeping only the rows in view', async () => {
    const p = await openPage(svc.url);
    await signIn(p, apiToken);
    const status = () => p.page.$eval('[data-testid=status]', (e) => e.textContent ?? '');
    for (const [order, first, last] of [
      ['asc', '0', '99999'],
      ['desc', '99999', '0'],
    ] as const) {
      await query(p, `['many'] | sort by _time ${order} | project _time, n`);
      expect(await status()).toMatch(/^100,000 rows matched · 10,000 rows · \d+ ms · more as you scroll$/);
      expect(await p.page.$$eval('[data-testid=result-viewport] .row', (r) => r.length)).toBeLessThan(60);
      // The last page comes full, so one more fetch finds the end.
      for (let i = 0; i < 30 && (await status()).endsWith('more as you scroll'); i++) {
        const before = await status();
        await p.page.$eval('[data-testid=result-viewport]', (e) => (e.scrollTop = e.scrollHeight));
        await p.page.waitForFunction(
          (s) => document.querySelector('[data-testid=status]')?.textContent !== s,
          { timeout: 15_000 },
          before,
        );
      }
      expect(await status()).toMatch(/^100,000 rows matched · 100,000 rows · \d+ ms$/);
      await p.page.waitForSelector('[data-row="99999"]');
      expect(await p.page.$eval('[data-row="99999"] .cell:nth-child(2)', (e) => e.textContent)).toBe(last);
      expect(await p.page.$$eval('[data-testid=result-viewport] .row', (r) => r.length)).toBeLessThan(60);
      // Across the pages' seams no row is lost or repeated: each row is its place in the order.
      for (const row of [0, 9_999, 10_000, 10_001, 50_000, 99_998]) {
        await p.page.$eval('[data-testid=result-viewport]', (e, at) => (e.scrollTop = at * 26), row);
        await p.page.waitForSelector(`[data-row="${row}"]`);
        const n = Number(await p.page.$eval(`[data-row="${row}"] .cell:nth-child(2)`, (e) => e.textContent));
        expect(n, `${order} row ${row}`).toBe(order === 'asc' ? row : 99_999 - row);
      }
      expect(first).toBe(order === 'asc' ? '0' : '99999');
    }
    await p.screenshot('query-rows');
    // Rows without their time cannot be paged: said when more are wanted, and the first page stays.
    await query(p, "['many'] | sort by _time asc | project n");
    await p.page.$eval('[data-testid=result-viewport]', (e) => (e.scrollTop = e.scrollHeight));
    await p.page.waitForSelector('[data-testid=paging-note]');
    expect(await p.page.$eval('[data-testid=paging-note]', (e) => e.textContent)).toMatch(
      /^More rows than one page \(10,000\), and no more can be fetched: cursor paging needs a query whose rows are events ordered by _time/,
    );
    expect(await status()).toMatch(/^100,000 rows matched · 10,000 rows · \d+ ms$/);
    await p.page.close();
  });

  it('saves the query in the editor as a starred query, lists it after a reload, and runs it when picked', async () => {
    const p = await openPage(svc.url);
    await signIn(p, ADMIN);
    await query(p, "['web'] | where status == 500 | count");
    await p.page.click('[data-testid=starred] summary');
    await p.page.type('[data-testid=starred-name]', 'server errors');
    await p.page.click('[data-testid=starred-save]');
    await p.page.waitForSelector('[data-testid=starred-item]');
    const saved = (await (await svc.call('GET', '/v2/apl-starred-queries')).json()) as {
      name: string;
      query: { apl: string; startTime: string; endTime: string };
    }[];
    expect(saved).toMatchObject([
      {
        name: 'server errors',
        query: { apl: "['web'] | where status == 500 | count", startTime: 'now-1h', endTime: 'now' },
      },
    ]);
    await p.page.goto(`${svc.url}/`, { waitUntil: 'networkidle0' });
    await p.page.waitForSelector('[data-testid=apl-editor]');
    await p.page.click('[data-testid=starred] summary');
    await p.page.waitForSelector('[data-testid=starred-item]');
    await p.page.click('[data-testid=starred-item]');
    await p.page.waitForFunction(() =>
      /rows matched/.test(document.querySelector('[data-testid=status]')?.textContent ?? ''),
    );
    expect(await p.page.$eval('.cm-content', (e) => e.textContent)).toBe("['web'] | where status == 500 | count");
    // 500 is the third status: (minute + 1) × 3 events a minute over 10 minutes.
    expect(await p.page.$eval('[data-row="0"] .cell', (e) => e.textContent)).toBe('165');
    expect(p.problems).toEqual([]);
    await p.page.close();
  });
});
