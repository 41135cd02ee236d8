/**
 * bench:console — the local console's budgets (issue 36): the bytes a first visit loads (its JavaScript and
 * CSS, gzipped), and the time from pressing Run to a drawn chart for
 * `summarize count() by bin(_time, 1m), status` over the events of a `ferry serve`, against the same API
 * call alone. Chromium (Debian's, headless) drives the page; the events are access-log lines posted to the
 * service (generated once per data directory, kept with --data-dir).
 *
 * Usage: npm run bench:console -- [--events 10000000] [--runs 5] [--data-dir DIR]
 */
import { gzipSync } from 'node:zlib';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { AccessLogGenerator } from './access-log.js';
import { benchArgs } from './args.js';
import { api, BENCH_ADMIN, startServer } from './server-process.js';

const values = benchArgs('usage: npm run bench:console -- [--events 10000000] [--runs 5] [--data-dir DIR]', {
  options: {
    events: { type: 'string', default: '10000000' },
    runs: { type: 'string', default: '5' },
    'data-dir': { type: 'string' },
  },
});
const total = Number(values.events);
const runs = Number(values.runs);
const CONSOLE = fileURLToPath(new URL('../console/', import.meta.url));
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const APL = "['access'] | summarize count() by bin(_time, 1m), status";
// The generator's log time starts here, about 1,000 events a second.
const RANGE = {
  startTime: '2026-11-01T00:00:00Z',
  endTime: new Date(Date.UTC(2026, 10, 1) + (total / 400) * 1000).toISOString(),
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function firstVisit(): void {
  const html = readFileSync(join(CONSOLE, 'index.html'), 'utf8');
  let js = 0;
  let css = 0;
  for (const m of html.matchAll(/\/assets\/([^"]+)/g)) {
    const gz = gzipSync(readFileSync(join(CONSOLE, 'assets', m[1]!)), { level: 9 }).length;
    if (m[1]!.endsWith('.js')) js += gz;
    else css += gz;
  }
  console.log(
    `first visit: JavaScript ${(js / 1024).toFixed(1)} KiB gzipped (target 300 KB), CSS ${(css / 1024).toFixed(1)} KiB`,
  );
}

async function load(url: string): Promise<void> {
  const datasets = (await api(url, 'GET', '/v2/datasets')) as { name: string }[];
  if (datasets.some((d) => d.name === 'access')) {
    const r = (await api(url, 'POST', '/v1/datasets/_apl?format=tabular', { apl: "['access'] | count", ...RANGE })) as {
      tables: { columns: number[][] }[];
    };
    if (Number(r.tables[0]!.columns[0]![0]) >= total) return;
  } else await api(url, 'POST', '/v2/datasets', { name: 'access' });
  const { token } = (await api(url, 'POST', '/v2/tokens', {
    name: 'bench-console',
    datasetCapabilities: { access: { ingest: ['create'] } },
  })) as { token: string };
  const gen = new AccessLogGenerator(11);
  const chunk = 50_000;
  const t0 = performance.now();
  for (let done = 0; done < total; done += chunk) {
    const r = await fetch(`${url}/v1/ingest/access`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
      body: gen.ndjson(Math.min(chunk, total - done)),
    });
    if (r.status !== 200) throw new Error(`ingest: ${r.status} ${await r.text()}`);
    process.stdout.write(`\rloaded ${(done + chunk).toLocaleString('en-US')} events`);
  }
  console.log(` in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

async function main(): Promise<void> {
  firstVisit();
  if (!CHROMIUM) throw new Error('Chromium is not installed (apt-get install chromium)');
  const dataDir = values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'ferry-bench-console-'));
  const server = await startServer(dataDir);
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1280,900'],
    defaultViewport: { width: 1280, height: 900 },
  });
  try {
    await load(server.url);
    const apiMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const r = (await api(server.url, 'POST', '/v1/datasets/_apl?format=tabular', { apl: APL, ...RANGE })) as {
        tables: { columns: unknown[][] }[];
      };
      apiMs.push(performance.now() - t0);
      if (i === 0) console.log(`result: ${r.tables[0]!.columns[0]!.length.toLocaleString('en-US')} rows`);
    }
    const page = await browser.newPage();
    await page.goto(`${server.url}/`, { waitUntil: 'networkidle0' });
    await page.type('input[name=token]', BENCH_ADMIN);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=apl-editor]');
    const link = `#/query?${new URLSearchParams({ apl: APL, start: RANGE.startTime, end: RANGE.endTime }).toString()}`;
    // The query page reads a shared link when it opens: the page is loaded again at it.
    await page.goto(`${server.url}/${link}`, { waitUntil: 'networkidle0' });
    await page.reload({ waitUntil: 'networkidle0' });
    await page.waitForSelector('[data-testid=run]:not([disabled])');
    const pageMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      // From the click to the frame after the chart says it drew its points.
      pageMs.push(
        await page.evaluate(
          () =>
            new Promise<number>((resolve) => {
              document.querySelector('[data-testid=chart]')?.removeAttribute('data-points');
              const t0 = performance.now();
              (document.querySelector('[data-testid=run]') as HTMLButtonElement).click();
              const check = () => {
                const chart = document.querySelector<HTMLElement>('[data-testid=chart]');
                if (chart?.dataset.points && chart.querySelector('canvas'))
                  requestAnimationFrame(() => resolve(performance.now() - t0));
                else requestAnimationFrame(check);
              };
              requestAnimationFrame(check);
            }),
        ),
      );
    }
    const points = await page.$eval(
      '[data-testid=chart]',
      (e) => `${(e as HTMLElement).dataset.points} points, ${(e as HTMLElement).dataset.series} series`,
    );
    const a = median(apiMs);
    const b = median(pageMs);
    console.log(`chart: ${points}`);
    console.log(`API call alone: median ${a.toFixed(0)} ms (${apiMs.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`Run to drawn chart: median ${b.toFixed(0)} ms (${pageMs.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`ratio ${(b / a).toFixed(2)} (target 1.5)`);
  } finally {
    await browser.close();
    await server.stop();
  }
}

await main();
