/**
 * The console's live view in Chromium: events ingested during the test appear as they arrive, only those
 * the `where` keeps; a pause stops them coming, and resuming catches up with what came meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, openPage } from '../../support/browser.js';
import { startTestService, type TestService } from '../../support/helpers.js';

let svc: TestService;
let token: string;

beforeAll(async () => {
  svc = await startTestService();
  token = await svc.apiToken();
  expect((await svc.call('POST', '/v2/datasets', { name: 'live' })).status).toBe(200);
});

afterAll(async () => {
  await closeBrowser();
  await svc?.close();
});

async function ingest(...statuses: number[]) {
  const body = statuses.map((status) =>
    JSON.stringify({ _time: new Date().toISOString(), status, path: `/s/${status}` }),
  );
  const r = await svc.call('POST', '/v1/ingest/live', body.join('\n'), token, {
    'content-type': 'application/x-ndjson',
  });
  expect(r.status).toBe(200);
}

describe('the live view', () => {
  it('shows new events the filter keeps as they arrive, and catches up after a pause', async () => {
    // Before the view opens: the dataset has its fields (a filter on a field no event has yet is an
    // APL error, which the view shows until one has), and this event is not one the filter keeps.
    await ingest(200);
    const p = await openPage(svc.url);
    await p.page.type('input[name=token]', token);
    await p.page.click('button[type=submit]');
    await p.page.waitForSelector('[data-testid=nav-live]');
    await p.page.click('[data-testid=nav-live]');
    await p.page.waitForSelector('[data-testid=live-dataset] option[value=live]');
    await p.page.select('[data-testid=live-dataset]', 'live');
    await p.page.type('[data-testid=live-filter]', 'status >= 500');
    await p.page.click('[data-testid=live-apply]');
    const shown = () =>
      p.page.$$eval('[data-testid=live-list] .live-event .text', (e) => e.map((x) => x.textContent ?? ''));
    const waitShown = (n: number) =>
      p.page.waitForFunction(
        (k) => document.querySelectorAll('[data-testid=live-list] .live-event').length === k,
        { timeout: 15_000 },
        n,
      );

    await ingest(200, 500, 503);
    await waitShown(2);
    expect((await shown()).map((t) => JSON.parse(t) as { status: number }).map((e) => e.status)).toEqual([500, 503]);
    expect(await p.page.$eval('[data-testid=live-status]', (e) => e.textContent)).toBe('Live · 2 events');

    await p.page.click('[data-testid=live-pause]');
    expect(await p.page.$eval('[data-testid=live-status]', (e) => e.textContent)).toBe('Paused · 2 events');
    await ingest(502, 404);
    await new Promise((r) => setTimeout(r, 2500));
    expect(await shown()).toHaveLength(2);

    await p.page.click('[data-testid=live-pause]');
    await waitShown(3);
    expect(JSON.parse((await shown())[2]!)).toMatchObject({ status: 502, path: '/s/502' });
    await ingest(599);
    await waitShown(4);
    await p.screenshot('live');
    expect(p.problems).toEqual([]);
    await p.page.close();
  });
});
