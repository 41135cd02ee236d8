/**
 * The console's datasets and monitors pages in Chromium: each dataset with its events, size, time span,
 * retention and fields (and why figures are missing for one the token may not query); monitors with
 * their state, last run and a timeline of runs and alerts; a monitor created and edited through the
 * form, a mistake marked at the field the service names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/cli/config.js';
import { tickPhaseMs } from '../../../src/service/monitors/scheduler.js';
import { closeBrowser, openPage, type BrowserPage } from '../../support/browser.js';
import { ADMIN, startTestService, tempDir, walkingClock, type TestService } from '../../support/helpers.js';
import { httpReceiver, type HttpReceiver } from '../../support/monitor-receivers.js';

const MIN = 60_000;
// Half an hour back from a minute boundary: the monitor's runs fall inside the hour its timeline shows.
const T0 = Math.floor(Date.now() / MIN) * MIN - 30 * MIN;
const clock = walkingClock(T0);
let svc: TestService;
let hook: HttpReceiver;

beforeAll(async () => {
  hook = await httpReceiver();
  const cfg = buildConfig({ service: { monitors: { enabled: false } } }, {});
  // The scheduler does not tick on its own: the test walks the clock and runs what is due.
  svc = await startTestService({ monitors: cfg.service.monitors }, tempDir(), { clock });
  for (const name of ['web', 'quiet', 'secret']) await svc.createDataset(name);
  expect((await svc.call('PUT', '/v2/datasets/quiet', { retentionDays: 30, useRetentionPeriod: true })).status).toBe(
    200,
  );
  const ingest = await svc.apiToken({ '*': { ingest: ['create'] } });
  const events = Array.from({ length: 1500 }, (_, i) => ({
    _time: new Date(Date.parse('2026-11-01T00:00:00Z') + i * 60_000).toISOString(),
    status: i % 10 === 0 ? 500 : 200,
    path: `/p/${i % 7}`,
  }));
  const r = await svc.call('POST', '/v1/ingest/web', JSON.stringify(events), ingest, {
    'content-type': 'application/json',
  });
  expect(r.status).toBe(200);
});

afterAll(async () => {
  await closeBrowser();
  await svc?.stop();
  await hook?.close();
});

async function signedIn(token: string, hash: string): Promise<BrowserPage> {
  const p = await openPage(svc.url);
  await p.page.type('input[name=token]', token);
  await p.page.click('button[type=submit]');
  await p.page.waitForSelector(`[data-testid=nav-${hash}]`);
  await p.page.click(`[data-testid=nav-${hash}]`);
  return p;
}

const cells = (p: BrowserPage, selector: string) =>
  p.page.$$eval(selector, (e) => e.map((x) => (x.textContent ?? '').trim()));

describe('the datasets page', () => {
  it("lists each dataset's events, size, span and retention, opens its fields, and says why one has no figures", async () => {
    // Sees every dataset (datasets:read) but may query only web and quiet.
    const token = await svc.apiToken({ web: { query: ['read'] }, quiet: { query: ['read'] } }, { datasets: ['read'] });
    const p = await signedIn(token, 'datasets');
    await p.page.waitForFunction(
      () => document.querySelectorAll('[data-testid=dataset-row] [data-testid=dataset-events]').length === 2,
      { timeout: 15_000 },
    );
    const row = (name: string) => `[data-testid=dataset-row][data-name=${name}]`;
    expect(await cells(p, '[data-testid=dataset-row] [data-testid=dataset-name]')).toEqual(['quiet', 'secret', 'web']);
    expect(await cells(p, `${row('web')} [data-testid=dataset-events]`)).toEqual(['1,500']);
    expect(await cells(p, `${row('web')} [data-testid=dataset-span]`)).toEqual([
      '2026-11-01 00:00:00 → 2026-11-02 00:59:00 (1d 59m)',
    ]);
    const size = (await cells(p, `${row('web')} [data-testid=dataset-size]`))[0]!;
    expect(size).toMatch(/^[\d.]+ (B|KiB|MiB)$/);
    expect(size).not.toBe('0 B');
    expect(await cells(p, `${row('quiet')} td`)).toEqual([
      'quiet',
      '0',
      '0 B',
      '0 B',
      'no events',
      '30 days',
      'service:events:v1',
    ]);
    expect(await cells(p, `${row('secret')} [data-testid=dataset-missing]`)).toEqual([
      expect.stringMatching(/query/) as unknown as string,
    ]);

    await p.page.click(`${row('web')} [data-testid=dataset-name]`);
    await p.page.waitForSelector('[data-testid=dataset-fields]');
    const fields = await p.page.$$eval('[data-testid=dataset-fields] [data-testid=field-row]', (rows) =>
      rows.map((r) => [r.querySelector('code')?.textContent, r.querySelector('[data-testid=field-type]')?.textContent]),
    );
    expect(Object.fromEntries(fields)).toEqual({
      _sysTime: 'datetime',
      _time: 'datetime',
      status: 'integer',
      path: 'string',
    });
    await p.screenshot('datasets');
    expect(p.problems.filter((x) => !/403/.test(x))).toEqual([]);
    await p.page.close();
  });
});

describe('the monitors page', () => {
  it('creates a monitor through the form, marks the field the service refuses, edits it, and shows its runs and alerts', async () => {
    const wh = await svc.call('POST', '/v2/notifiers', {
      name: 'ops hook',
      properties: { webhook: { url: `${hook.url}/ops` } },
    });
    expect(wh.status).toBe(200);
    clock.t = T0;
    const p = await signedIn(ADMIN, 'monitors');
    await p.page.waitForSelector('[data-testid=monitor-new]');
    await p.page.click('[data-testid=monitor-new]');
    await p.page.waitForSelector('[data-testid=monitor-form]');
    await p.page.type('input[name=name]', 'server errors');
    await p.page.type('textarea[name=aplQuery]', "['web'] | where status >= 500 | count");
    // No operator: the service says a Threshold monitor needs one, and the form marks that field.
    await p.page.select('select[name=operator]', '');
    await p.page.click('[data-testid=monitor-save]');
    await p.page.waitForSelector('[data-field=operator].invalid [data-testid=field-error]');
    expect(await cells(p, '[data-testid=field-error]')).toEqual([
      'operator is required for a Threshold monitor (Below, BelowOrEqual, Above or AboveOrEqual)',
    ]);
    expect(await p.page.$eval('select[name=operator]', (e) => e.getAttribute('aria-invalid'))).toBe('true');
    await p.screenshot('monitor-form-error');

    await p.page.select('select[name=operator]', 'Above');
    await clear(p, 'input[name=threshold]');
    await p.page.type('input[name=threshold]', '2');
    await clear(p, 'input[name=intervalMinutes]');
    await p.page.type('input[name=intervalMinutes]', '1');
    await clear(p, 'input[name=rangeMinutes]');
    await p.page.type('input[name=rangeMinutes]', '1');
    await p.page.click('[data-field=notifierIds] input[type=checkbox]');
    await p.page.click('[data-testid=monitor-save]');
    await p.page.waitForSelector('[data-testid=monitor-row]');
    const [made] = (await (await svc.call('GET', '/v2/monitors')).json()) as Record<string, unknown>[];
    expect(made).toMatchObject({
      name: 'server errors',
      type: 'Threshold',
      operator: 'Above',
      threshold: 2,
      intervalMinutes: 1,
      rangeMinutes: 1,
      notifierIds: [((await wh.json()) as { id: string }).id],
    });
    expect(await cells(p, '[data-testid=monitor-state]')).toEqual(['not run yet']);

    // Edited: a lower threshold, everything else kept.
    await p.page.click('[data-testid=monitor-edit]');
    await p.page.waitForSelector('[data-testid=monitor-form]');
    expect(await p.page.$eval('textarea[name=aplQuery]', (e) => (e as HTMLTextAreaElement).value)).toBe(
      "['web'] | where status >= 500 | count",
    );
    await clear(p, 'input[name=threshold]');
    await p.page.type('input[name=threshold]', '0');
    await p.page.click('[data-testid=monitor-save]');
    await p.page.waitForSelector('[data-testid=monitor-row]');
    const id = made!.id as string;
    const edited = (await (await svc.call('GET', `/v2/monitors/${id}`)).json()) as Record<string, unknown>;
    expect(edited).toMatchObject({ threshold: 0, operator: 'Above', notifierIds: made!.notifierIds });

    // Runs: 500s in the windows of ticks 2 and 3 open an alert, none in tick 4's closes it.
    const m = svc.alerting.monitors.get(id)!;
    const at = (k: number) => T0 + k * MIN + tickPhaseMs(m);
    clock.t = at(0);
    await svc.alerting.scheduler.arm(m);
    const ingest = await svc.apiToken({ web: { ingest: ['create'] } });
    for (const k of [2, 3]) {
      const r = await svc.call(
        'POST',
        '/v1/ingest/web',
        JSON.stringify([{ _time: new Date(at(k) - 20_000).toISOString(), status: 503, path: '/x' }]),
        ingest,
        { 'content-type': 'application/json' },
      );
      expect(r.status).toBe(200);
    }
    for (const k of [1, 2, 3, 4, 5]) {
      clock.t = at(k);
      await svc.alerting.scheduler.runDue();
    }
    await svc.alerting.scheduler.runLog.flush();
    // The notifier the form chose is the one told.
    expect(hook.requests.filter((r) => r.path === '/ops').map((r) => (r.json() as { action: string }).action)).toEqual([
      'Open',
      'Closed',
    ]);

    await p.page.click('[data-testid=monitors-refresh]');
    await p.page.waitForFunction(
      () => document.querySelector('[data-testid=monitor-timeline]')?.getAttribute('data-runs') === '5',
      { timeout: 15_000 },
    );
    expect(await p.page.$eval('[data-testid=monitor-timeline]', (e) => e.getAttribute('data-alerts'))).toBe('1');
    expect(await p.page.$$eval('[data-testid=monitor-timeline] rect.run.triggered', (e) => e.length)).toBe(2);
    expect(await p.page.$$eval('[data-testid=monitor-timeline] rect.run.normal', (e) => e.length)).toBe(3);
    expect(await cells(p, '[data-testid=monitor-state]')).toEqual(['normal']);
    expect(await p.page.$('[data-testid=monitor-alert]')).toBeNull();
    const lastRun = (await cells(p, '[data-testid=monitor-last-run]'))[0]!;
    expect(lastRun).toContain(new Date(at(5)).toISOString().slice(0, 19).replace('T', ' '));
    expect(lastRun).toContain('value 0');
    await p.screenshot('monitors');
    // The one refusal the page met is the form's, shown at its field.
    expect(p.problems).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    await p.page.close();
  });
});

async function clear(p: BrowserPage, selector: string): Promise<void> {
  await p.page.click(selector, { clickCount: 3 });
  await p.page.keyboard.press('Backspace');
}
