/**
 * The service's promise under hostile input: whatever a client sends, the answer is a 2xx, or a 4xx with
 * a JSON `{code, message}`, never a 5xx; and what was acknowledged before stays there. A seeded schedule
 * sends the real service (`ferry serve`, a child process) ingest bodies in every format and encoding,
 * whole and broken in many ways, APL text (token soups, and valid pipelines of every operator), and odd
 * paths. Used by `npm test` (about half a minute) and `npm run fuzz`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync, gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { seededRandom } from './torture.js';

const MAIN = fileURLToPath(
  new URL(import.meta.url.includes('/dist/bench/') ? '../src/cli/main.js' : '../dist/src/cli/main.js', import.meta.url),
);
const ADMIN = 'xapt-00000000-0000-4000-8000-00000000f022';

export interface FuzzReport {
  seed: number;
  requests: number;
  byStatus: Record<string, number>;
  /** Answers that break the promise: a 5xx, an error without {code, message}, a lost canary event. */
  violations: string[];
  /** The slowest answers, for a run that takes longer than it should. */
  slowest: { ms: number; what: string }[];
}

type Rnd = () => number;

const pickOf =
  (rnd: Rnd) =>
  <T>(xs: readonly T[]): T =>
    xs[Math.floor(rnd() * xs.length)]!;

/** A JSON value of a random shape: nested objects and arrays (sometimes very deep), odd keys, odd strings. */
function value(rnd: Rnd, depth = 0): unknown {
  const pick = pickOf(rnd);
  const k = rnd();
  if (depth > 4 || k < 0.45) {
    return pick([
      0,
      -1,
      1.5,
      1e308,
      -1e-308,
      2 ** 63,
      true,
      false,
      null,
      '',
      'text',
      '\u0000',
      '\ud800',
      '😀',
      'x'.repeat(5000),
      '2024-01-01T00:00:00Z',
      '1700000000',
      "'; DROP TABLE x; --",
      '"quoted"',
      '\\',
      '%s%n',
    ]);
  }
  if (k < 0.55) {
    const n = 1 + Math.floor(rnd() * 300); // arrays nested past the depth cap too
    return JSON.parse(`${'['.repeat(n)}${']'.repeat(n)}`);
  }
  if (k < 0.75) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(rnd, depth + 1));
  return object(rnd, depth + 1);
}

function key(rnd: Rnd): string {
  return pickOf(rnd)([
    'a',
    'A',
    'b.c',
    '',
    ' ',
    '_time',
    '_sysTime',
    '_rowID',
    '_source',
    'sl/ash',
    'til~de',
    '~1',
    'quo"te',
    "apo'",
    'x'.repeat(300),
    '😀',
    'ü',
    '\t',
    'k\u0001',
    'nested',
    'n',
    'time',
    'timestamp',
    `f${Math.floor(rnd() * 50)}`,
  ]);
}

function object(rnd: Rnd, depth = 0): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(rnd() * 6); i > 0; i--) o[key(rnd)] = value(rnd, depth);
  return o;
}

/** Breaks a body: cut short, bytes flipped, bytes inserted, or left whole. */
function mangle(rnd: Rnd, body: Buffer): Buffer {
  const k = rnd();
  if (k < 0.5 || body.length === 0) return body;
  if (k < 0.7) return body.subarray(0, Math.floor(rnd() * body.length));
  const out = Buffer.from(body);
  for (let i = 0; i < 1 + Math.floor(rnd() * 8); i++) out[Math.floor(rnd() * out.length)] = Math.floor(rnd() * 256);
  if (k < 0.85) return out;
  return Buffer.concat([out, Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x22])]);
}

function ingestRequest(rnd: Rnd): { body: Buffer; headers: Record<string, string>; query: string } {
  const pick = pickOf(rnd);
  const events = Array.from({ length: 1 + Math.floor(rnd() * 30) }, () => object(rnd));
  const format = pick(['ndjson', 'json', 'csv', 'raw']);
  let text: string;
  let type: string;
  if (format === 'ndjson')
    [text, type] = [
      events.map((e) => JSON.stringify(e)).join('\n'),
      pick(['application/x-ndjson', 'application/nd-json', 'application/json']),
    ];
  else if (format === 'json') [text, type] = [JSON.stringify(events), 'application/json'];
  else if (format === 'csv') {
    const cols = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => key(rnd).replace(/[\n\r]/g, ''));
    text = [cols.join(','), ...events.map(() => cols.map(() => JSON.stringify(String(value(rnd, 5)))).join(','))].join(
      '\n',
    );
    type = 'text/csv';
  } else [text, type] = [String(value(rnd)), pick(['application/json', 'text/plain', 'application/xml', ''])];
  let body = mangle(rnd, Buffer.from(text));
  const encoding = pick(['', '', 'gzip', 'zstd', 'deflate', 'br', 'gzip']);
  if (encoding === 'gzip')
    body = rnd() < 0.8 ? gzipSync(body) : body; // sometimes a lie
  else if (encoding === 'zstd') body = rnd() < 0.8 ? zstdCompress(body) : body;
  else if (encoding === 'deflate') body = deflateSync(body);
  if (encoding && rnd() < 0.2) body = mangle(rnd, body);
  const headers: Record<string, string> = {
    ...(type ? { 'content-type': type } : {}),
    ...(encoding ? { 'content-encoding': encoding } : {}),
  };
  if (rnd() < 0.15)
    headers['x-axiom-event-labels'] = pick(['{"env":"x"}', '{', '[]', '{"":1}', '{"a":{"b":1}}', 'null']);
  if (format === 'csv' && rnd() < 0.3) headers['x-axiom-csv-fields'] = pick(['a,b', '', ',,', 'a,"b']);
  const query =
    rnd() < 0.2
      ? `?${pick(['timestamp-field=a', 'timestamp-format=unix', 'timestamp-format=2006-01-02', 'timestamp-format=%Y', 'csv-delimiter=;', 'csv-delimiter=', 'timestamp-field='])}`
      : '';
  return { body, headers, query };
}

const OPERATORS = [
  'where a == 1',
  'where f1 contains "x"',
  'extend z = strlen(tostring(a))',
  'project a, b',
  'project-away a',
  'summarize count() by a',
  'summarize avg(toreal(f2)), dcount(f3) by bin(_time, 1h)',
  'sort by _time desc',
  'take 3',
  'top 2 by a',
  'count',
  'distinct a',
  'getschema',
  "union ['fuzz']",
  "search 'x'",
  "join kind=leftouter (['fuzz'] | take 2) on a",
  'mv-expand a',
  "parse a with * '/' b",
  'sample 0.5',
  'make-series count() on _time step 1h',
  "lookup (datatable(a:long, l:string)[1, 'x']) on a",
  'project-rename q = a',
  'extend d = todynamic(a)',
];
const SOUP = [
  '|',
  '[',
  ']',
  '(',
  ')',
  "'",
  '"',
  ',',
  '=',
  '==',
  '!~',
  'where',
  'summarize',
  'by',
  'let',
  ';',
  'datatable',
  'range',
  'print',
  '1',
  '1.5e309',
  "'x",
  '-',
  'not',
  'in',
  '*',
  '$left',
  '.',
  '\\',
  '\n',
  'toscalar',
  'bin',
  '_time',
  "['fuzz']",
  "['nope']",
  'ago(1d)',
  '{',
  '}',
  '@',
  '#',
  '\u0000',
];

function aplText(rnd: Rnd): string {
  const pick = pickOf(rnd);
  if (rnd() < 0.5) return Array.from({ length: Math.floor(rnd() * 25) }, () => pick(SOUP)).join(rnd() < 0.5 ? ' ' : '');
  const ops = Array.from({ length: Math.floor(rnd() * 5) }, () => pick(OPERATORS));
  return [
    pick(["['fuzz']", "['canary']", "['fuzz'] | union ['canary']", 'print x = 1', 'datatable(a:long)[1,2]']),
    ...ops,
  ].join(' | ');
}

function oddPath(rnd: Rnd): { method: string; path: string } {
  const pick = pickOf(rnd);
  return pick([
    { method: 'GET', path: '/v2/datasets/%ff' },
    { method: 'GET', path: `/v2/datasets/${'x'.repeat(5000)}` },
    { method: 'GET', path: '/v2/datasets/fuzz/fields/%00' },
    { method: 'DELETE', path: '/v2/datasets/nope' },
    { method: 'POST', path: '/v1/ingest/' },
    { method: 'POST', path: '/v1/ingest/%2e%2e' },
    { method: 'PUT', path: '/v2/tokens/x' },
    { method: 'GET', path: '/v1/datasets/fuzz/query' },
    { method: 'PATCH', path: '/v2/datasets' },
  ]);
}

/** Starts `ferry serve` on a fresh data dir and answers its URL; the caller stops it. */
async function serve(
  dir: string,
  errors: string[],
  lastLines: string[],
): Promise<{ url: string; child: ChildProcess }> {
  // Debug: the steps of a shutdown, for one that does not end (the last lines are kept for the report).
  const config = join(dir, 'fuzz.yaml');
  writeFileSync(config, 'log:\n  level: debug\n');
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--data-dir', dir],
    { env: { ...process.env, FERRY_ADMIN_TOKEN: ADMIN }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  let listening: string | undefined;
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    // The service's own account of a 5xx, for the violation it caused.
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      if (!/incoming request|request completed/.test(line)) {
        lastLines.push(line.slice(0, 300));
        if (lastLines.length > 8) lastLines.shift();
      }
      if (line.includes('"level":50'))
        errors.push(
          ((JSON.parse(line) as { err?: { message?: string } }).err?.message ?? line).split('\n')[0]!.slice(0, 300),
        );
      else if (line.includes('event service listening')) listening = line;
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const end = Date.now() + 30_000;
  for (;;) {
    if (listening) return { url: (JSON.parse(listening) as { url: string }).url, child };
    if (child.exitCode !== null || Date.now() > end) throw new Error(`ferry serve did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Bounds a run: a request that hangs, or a shutdown that does, is a violation rather than a stuck suite. */
const REQUEST_TIMEOUT_MS = 30_000;
const SHUTDOWN_TIMEOUT_MS = 30_000;

export async function fuzz(o: { seed: number; durationMs: number; log?: (line: string) => void }): Promise<FuzzReport> {
  const rnd = seededRandom(o.seed);
  const pick = pickOf(rnd);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-fuzz-'));
  const serverErrors: string[] = [];
  const lastLines: string[] = [];
  const { url, child } = await serve(dir, serverErrors, lastLines);
  const report: FuzzReport = { seed: o.seed, requests: 0, byStatus: {}, violations: [], slowest: [] };
  const admin = { authorization: `Bearer ${ADMIN}` };
  const call = async (
    method: string,
    path: string,
    body: Buffer | string | undefined,
    headers: Record<string, string>,
    what: string,
  ) => {
    report.requests++;
    let res: Response;
    let text: string;
    const started = Date.now();
    try {
      res = await fetch(`${url}${path}`, {
        method,
        headers,
        body: body as BodyInit | undefined,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await res.text();
    } catch (e) {
      report.violations.push(`${what}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s (${(e as Error).message})`);
      return undefined;
    } finally {
      noteSlow(report, Date.now() - started, what);
    }
    report.byStatus[res.status] = (report.byStatus[res.status] ?? 0) + 1;
    if (res.status >= 500) {
      await new Promise((r) => setTimeout(r, 20)); // the log line follows the answer
      report.violations.push(
        `${what}: ${res.status} ${text.slice(0, 200)} (server: ${serverErrors.at(-1) ?? 'no log'})`,
      );
    }
    if (res.status >= 400) {
      let ok = false;
      try {
        const j = JSON.parse(text) as { code?: unknown; message?: unknown };
        ok = j.code === res.status && typeof j.message === 'string' && j.message.length > 0;
      } catch {
        // not JSON
      }
      if (!ok) report.violations.push(`${what}: ${res.status} without {code, message}: ${text.slice(0, 200)}`);
    }
    if (!res.headers.get('x-axiom-trace-id')) report.violations.push(`${what}: no X-Axiom-Trace-Id`);
    return { status: res.status, text };
  };
  try {
    for (const name of ['fuzz', 'canary'])
      await call(
        'POST',
        '/v2/datasets',
        JSON.stringify({ name }),
        { ...admin, 'content-type': 'application/json' },
        `create ${name}`,
      );
    const created = await call(
      'POST',
      '/v2/tokens',
      JSON.stringify({ name: 'fuzz', datasetCapabilities: { '*': { ingest: ['create'], query: ['read'] } } }),
      { ...admin, 'content-type': 'application/json' },
      'token',
    );
    const token = (JSON.parse(created!.text) as { token: string }).token;
    const bearer = { authorization: `Bearer ${token}` };
    // The canary: acknowledged events that every later check must still find.
    const canary = Array.from({ length: 200 }, (_, i) =>
      JSON.stringify({ canary: i, note: 'acknowledged before the fuzz' }),
    ).join('\n');
    const acked = await call(
      'POST',
      '/v1/ingest/canary',
      canary,
      { ...bearer, 'content-type': 'application/x-ndjson' },
      'canary',
    );
    if (acked?.status !== 200) throw new Error(`the canary was not acknowledged: ${acked?.text}`);
    const checkCanary = async (when: string) => {
      const r = await call(
        'POST',
        '/v1/query/_apl',
        JSON.stringify({ apl: "['canary'] | where isnotnull(canary) | summarize n = dcount(canary)" }),
        { ...admin, 'content-type': 'application/json' },
        'canary check',
      );
      const n =
        r?.status === 200
          ? (JSON.parse(r.text) as { tables: { columns: unknown[][] }[] }).tables[0]?.columns[0]?.[0]
          : undefined;
      if (n !== 200) report.violations.push(`${when}: the canary reads ${String(n)} of 200 acknowledged events`);
    };
    const end = Date.now() + o.durationMs;
    let lastLog = Date.now();
    let round = 0;
    while (Date.now() < end) {
      const k = rnd();
      const auth: Record<string, string> =
        rnd() < 0.05
          ? pick<Record<string, string>>([{}, { authorization: 'Bearer xaat-nope' }, { authorization: 'Basic x' }])
          : bearer;
      if (k < 0.55) {
        const r = ingestRequest(rnd);
        await call(
          'POST',
          `/v1/ingest/${pick(['fuzz', 'fuzz', 'canary', 'nope'])}${r.query}`,
          r.body,
          { ...auth, ...r.headers },
          `ingest ${JSON.stringify(r.headers)}${r.query}`,
        );
      } else if (k < 0.85) {
        const apl = aplText(rnd);
        const body =
          rnd() < 0.9
            ? JSON.stringify({ apl, startTime: pick([undefined, 'now-1d', 'garbage', '2000-01-01T00:00:00Z']) })
            : mangle(rnd, Buffer.from(JSON.stringify({ apl })));
        await call(
          'POST',
          `/v1/query/_apl?format=${pick(['tabular', 'legacy', 'nope'])}`,
          body,
          { ...auth, 'content-type': 'application/json' },
          `apl ${JSON.stringify(apl).slice(0, 300)}`,
        );
      } else if (k < 0.93) {
        const legacy = {
          startTime: '2000-01-01T00:00:00Z',
          endTime: '2100-01-01T00:00:00Z',
          filter: {
            op: pick(['==', 'and', 'contains', 'bogus', '']),
            field: key(rnd),
            value: value(rnd, 4),
            children: [],
          },
          virtualFields: rnd() < 0.3 ? [{ alias: key(rnd), expr: aplText(rnd) }] : [],
          aggregations: rnd() < 0.3 ? [{ op: pick(['count', 'avg', 'nope']), field: key(rnd) }] : [],
        };
        await call(
          'POST',
          `/v1/datasets/${pick(['fuzz', 'canary'])}/query`,
          JSON.stringify(legacy),
          { ...auth, 'content-type': 'application/json' },
          `legacy ${JSON.stringify(legacy).slice(0, 300)}`,
        );
      } else {
        const p = oddPath(rnd);
        await call(
          p.method,
          p.path,
          p.method === 'GET' || p.method === 'DELETE' ? undefined : '{',
          { ...admin, 'content-type': 'application/json' },
          `${p.method} ${p.path.slice(0, 80)}`,
        );
      }
      if (++round % 50 === 0) await checkCanary(`after ${round} requests`);
      if (o.log && Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        o.log(`  ${report.requests} requests, ${report.violations.length} violations`);
      }
      if (report.violations.length > 20) break;
    }
    await checkCanary('at the end');
  } finally {
    child.kill('SIGTERM');
    const exited = await new Promise<boolean>((r) => {
      const t = setTimeout(() => r(false), SHUTDOWN_TIMEOUT_MS);
      child.once('exit', () => {
        clearTimeout(t);
        r(true);
      });
    });
    if (!exited) {
      report.violations.push(
        `ferry serve did not exit within ${SHUTDOWN_TIMEOUT_MS / 1000} s of SIGTERM; its last lines: ${lastLines.join(' | ')}`,
      );
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  }
  return report;
}

/** Keeps the three slowest answers. */
function noteSlow(report: FuzzReport, ms: number, what: string): void {
  if (report.slowest.length === 3 && ms <= report.slowest[2]!.ms) return;
  report.slowest.push({ ms, what: what.slice(0, 200) });
  report.slowest.sort((a, b) => b.ms - a.ms);
  report.slowest.length = Math.min(3, report.slowest.length);
}
