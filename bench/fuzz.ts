/**
 * The service's promise under hostile input: whatever a client sends, the answer is a 2xx, or a 4xx with
 * a JSON `{code, message}`, never a 5xx; and what was acknowledged before stays there. A seeded schedule
 * sends the real service (`ferry serve`, a child process) ingest bodies in every format and encoding,
 * whole and broken in many ways, APL text (token soups, and valid pipelines of every operator), names
 * objects inherit, queries hungry for time and memory (lets that double, JavaScript functions over
 * growing strings, wide expansions, the queries a security review crashed the service with), and odd
 * paths. Beside the answers it watches the process: it stays up, no query answers later than
 * query_timeout + 2 s, another client's GET /v2/user answers within 1 s throughout, and the resident
 * memory stays under memory_limit + 256 MB. Used by `npm test` (about half a minute) and `npm run fuzz`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync, gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../src/cli/node-flags.js';
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
  /** The slowest GET /v2/user of the watching client, and the resident memory's peak (MB). */
  slowestUserMs: number;
  peakRssMb: number;
  /** What was being sent when the resident memory peaked. */
  peakDuring: string;
}

/** The service's settings under the fuzz, and the bounds the watch holds it to. */
const QUERY_TIMEOUT_MS = 10_000;
const MEMORY_LIMIT_MB = 512;
const RSS_LIMIT_MB = MEMORY_LIMIT_MB + 256;
const USER_CALL_LIMIT_MS = 1000;

/** Names every object inherits: where a user gives a name, the service must not find these. */
const INHERITED = Object.getOwnPropertyNames(Object.prototype);

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
    ...INHERITED,
  ]);
}

function object(rnd: Rnd, depth = 0): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  // Defined, not assigned: a key such as __proto__ is an own key of the body, as in the JSON a client sends.
  for (let i = Math.floor(rnd() * 6); i > 0; i--)
    Object.defineProperty(o, key(rnd), {
      value: value(rnd, depth),
      enumerable: true,
      writable: true,
      configurable: true,
    });
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
  } else {
    const v = value(rnd);
    [text, type] = [
      v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v),
      pick(['application/json', 'text/plain', 'application/xml', '']),
    ];
  }
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
  ...INHERITED,
  '5constructor',
];

/** Queries that ask for much time or memory, each as a user could write it; some are refused by a limit. */
function hungryQuery(rnd: Rnd): string {
  const pick = pickOf(rnd);
  const n = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const a = (k: number) => 'a'.repeat(k);
  switch (n(0, 10)) {
    case 0: // a replacement token that grows every pattern's output (crashed the service)
      return `print x=range(1,${n(2, 20)},1) | mv-expand x | extend s=substring(strcat('a', tostring(x)), 0, 1) | redact replaceToken='${a(n(100, 30_000))}' 'a', 'a+', 'b' | summarize sum(strlen(s))`;
    case 1: // patterns that multiply a value (held the service for 91 s)
      return `print x=range(1,${n(2, 50)},1) | mv-expand x | extend s=strcat('a', tostring(x)) | redact replaceToken='${a(n(2, 12))}' ${Array(n(2, 10)).fill("'a'").join(',')} | summarize sum(strlen(s))`;
    case 2: {
      // lets that double with each line
      const k = n(5, 30);
      const step = pick(['v + v', 'strcat(v, v)', 'iff(true, v, v)']);
      const lets = Array.from({ length: k }, (_, i) => `let v${i + 1} = ${step.replaceAll('v', `v${i}`)};`);
      return `let v0 = ${pick(['1', "'ab'", 'now()', 'rand()'])}; ${lets.join(' ')} print x = v${k}`;
    }
    case 3: // a chain of lets deeper than any expression may be
      return `let v0 = 1; ${Array.from({ length: n(200, 3000) }, (_, i) => `let v${i + 1} = v${i} + 1;`).join(' ')} print x = v0`;
    case 4: {
      // JavaScript functions over strings that double
      let q = `print x=range(1,${n(1, 3000)},1) | mv-expand x | extend s=strrep(strcat('ab,', tostring(x)), ${n(1, 1024)})`;
      for (let i = n(0, 12); i > 0; i--) q += ' | extend s=strcat(s, s)';
      return `${q} | ${pick([
        'extend h=hash_sha512(s) | summarize count()',
        'extend h=hash(s) | summarize count()',
        'extend h=parse_csv(s) | summarize count()',
        "redact replaceToken='###' 'a' | summarize sum(strlen(s))",
        'summarize p=phrases(s)',
      ])}`;
    }
    case 5: // wide expansions
      return `print x=range(1,${pick(['1000000', '10000000', '100000000'])},1) | mv-expand x | summarize ${pick(['count()', 'make_list(x)', 'dcount(x)', 'sum(x)'])}`;
    case 6: // the whole texts dataset through the analysis functions
      return pick([
        "['texts'] | summarize phrases(msg, 5)",
        "['texts'] | summarize spotlight(status >= 400, host, dur) by bin(_time, 1h)",
        "['texts'] | summarize phrases(msg, 3) by host",
        "['texts'] | extend h = hash_sha512(msg) | summarize dcount(h)",
      ]);
    case 7: {
      // functions nested in themselves (each writes its argument out more than once)
      const depth = n(2, 8);
      return `print x = ${'format_ipv4('.repeat(depth)}'1.2.3.4'${')'.repeat(depth)}`;
    }
    case 8: // results past what one answer may hold
      return `print x=range(1,${n(1000, 50_000)},1) | mv-expand x | extend s=strrep('abcdefgh', ${n(100, 1024)}), t=strrep('xyz', ${n(100, 1024)})`;
    case 9: {
      // columns made from one another, then filters and summaries that DuckDB would push down into them
      const long = rnd() < 0.5;
      const base = long
        ? `strrep(strcat(tostring(x), 'abcdefghabcdefgh'), ${n(10, 1000)})`
        : pick(['tostring(x)', 'x']);
      const step = pick([
        ' | extend s = substring(strcat(s, s), 0, 4)',
        ' | summarize c = count() by s = substring(strcat(s, s), 0, 4)',
        ' | extend s = iff(strlen(s) > 2, s, strcat(s, s))',
        ' | summarize h = histogram(strlen(s), 2), c = count() by s = substring(s, 0, 2)',
      ]);
      const many = `strlen(strcat(${Array(n(2, 60)).fill('s').join(', ')}))`;
      const q = `print x=range(1,${n(1, 3000)},1) | mv-expand x to typeof(string) | extend s = ${base}${step.repeat(n(2, 24))}`;
      return `${q} | ${pick([
        "where s startswith '1' | count",
        `where ${Array(n(1, 20)).fill(many).join(' + ')} > 0 | count`,
        'summarize h = histogram(strlen(s), 10)',
        "where s != '' | summarize p = phrases(s)",
        `${pick(['join', 'join kind=leftouter', 'lookup'])} (print y=range(1,${n(1, 3000)},1) | mv-expand y to typeof(string) | extend s = y) on s | where s == '1111' | count`,
      ])}`;
    }
    default: {
      // tabular lets that double
      const k = n(5, 30);
      const lets = Array.from({ length: k }, (_, i) => `let t${i + 1} = t${i} | union t${i};`);
      return `let t0 = datatable(a:long)[1]; ${lets.join(' ')} t${k} | count`;
    }
  }
}

/** The queries a security review crashed or stalled the service with: sent first in every run. */
export const REVIEW_QUERIES = [
  `print x=range(1,12,1) | mv-expand x | extend s=substring(strcat('a', tostring(x)), 0, 1) | redact replaceToken='${'a'.repeat(23_170)}' 'a', 'a+', 'b' | summarize sum(strlen(s))`,
  "print x=range(1,5,1) | mv-expand x | extend s=strcat('a', tostring(x)) | redact replaceToken='aaaaaaaaaa' 'a','a','a','a','a','a','a','a' | summarize sum(strlen(s))",
  `let v0 = 1; ${Array.from({ length: 22 }, (_, i) => `let v${i + 1} = v${i} + v${i};`).join(' ')} print x = v22`,
  "['texts'] | summarize phrases(msg, 10)",
  'print x = constructor(null)',
  'print x = 5constructor',
  'declare query_parameters(p:constructor=1); print p',
  `let v0 = 1; ${Array.from({ length: 5000 }, (_, i) => `let v${i + 1} = v${i} + 1;`).join(' ')} print x = v5000`,
];

function aplText(rnd: Rnd): string {
  const pick = pickOf(rnd);
  if (rnd() < 0.12) return hungryQuery(rnd);
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
  writeFileSync(
    config,
    `log:\n  level: debug\nservice:\n  memory_limit: ${MEMORY_LIMIT_MB}MB\n  query_timeout: ${QUERY_TIMEOUT_MS / 1000}s\n`,
  );
  // Started as the daemon is (npm start, systemd, the image): its memory is what the watch holds to a bound.
  const child = spawn(
    process.execPath,
    [...DAEMON_NODE_FLAGS, MAIN, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--data-dir', dir],
    { env: { ...DAEMON_ENV, ...process.env, FERRY_ADMIN_TOKEN: ADMIN }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  let listening: string | undefined;
  // The service's log is on stderr, one JSON object a line.
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    out += d.toString();
    // The service's own account of a 5xx, for the violation it caused.
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      if (!/incoming request|request completed/.test(line)) {
        lastLines.push(line.slice(0, 300));
        if (lastLines.length > 8) lastLines.shift();
      }
      if (line.includes('"level":"error"'))
        errors.push(
          ((JSON.parse(line) as { err?: { message?: string } }).err?.message ?? line).split('\n')[0]!.slice(0, 300),
        );
      else if (line.includes('event service listening')) listening = line;
    }
  });
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
  const report: FuzzReport = {
    seed: o.seed,
    requests: 0,
    byStatus: {},
    violations: [],
    slowest: [],
    slowestUserMs: 0,
    peakRssMb: 0,
    peakDuring: '',
  };
  /** What the schedule is sending now, for a violation the watch sees. */
  let sending = 'setup';
  const watch = watchProcess(url, child, report, () => sending);
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
    sending = what;
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
      const ms = Date.now() - started;
      noteSlow(report, ms, what);
      // A query answers by its time limit (a statement deaf to the interrupt within a second more).
      if (/^(apl|legacy|review) /.test(what) && ms > QUERY_TIMEOUT_MS + 2000)
        report.violations.push(`${what}: answered after ${ms} ms, past query_timeout (${QUERY_TIMEOUT_MS} ms) + 2 s`);
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
    // Texts enough that reading them in one JavaScript call once held the service for a second and more.
    await call(
      'POST',
      '/v2/datasets',
      JSON.stringify({ name: 'texts' }),
      { ...admin, 'content-type': 'application/json' },
      'create texts',
    );
    const words = 'alpha beta gamma delta error timeout connection refused user login failed disk'.split(' ');
    const texts = Array.from({ length: 100_000 }, (_, i) =>
      JSON.stringify({
        msg: Array.from({ length: 5 + (i % 7) }, (_, j) => words[(i * 7 + j * 13 + (i >> 3)) % words.length]).join(' '),
        status: 200 + (i % 5) * 100,
        host: `h${i % 50}`,
        dur: i % 1000,
      }),
    ).join('\n');
    await call('POST', '/v1/ingest/texts', texts, { ...bearer, 'content-type': 'application/x-ndjson' }, 'texts');
    for (const apl of REVIEW_QUERIES)
      await call(
        'POST',
        '/v1/query/_apl',
        JSON.stringify({ apl }),
        { ...bearer, 'content-type': 'application/json' },
        `review ${apl.slice(0, 120)}`,
      );
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
    await watch.stop();
    if (child.exitCode !== null || child.signalCode !== null)
      report.violations.push(
        `ferry serve exited during the run (${child.exitCode ?? child.signalCode}); its last lines: ${lastLines.join(' | ')}`,
      );
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

/**
 * Watches the service beside the schedule: another client's GET /v2/user every 200 ms answers within a
 * second (no request stalls the others), and the resident memory stays under memory_limit + 256 MB.
 */
function watchProcess(
  url: string,
  child: ChildProcess,
  report: FuzzReport,
  sending: () => string,
): { stop(): Promise<void> } {
  let running = true;
  const rss = setInterval(() => {
    let mb = 0;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      mb = m ? Math.round(Number(m[1]) / 1024) : 0;
    } catch {
      return; // exited: the run says so
    }
    const first = report.peakRssMb <= RSS_LIMIT_MB;
    if (mb > report.peakRssMb) {
      report.peakRssMb = mb;
      report.peakDuring = sending().slice(0, 600);
    }
    // Said once, with what ran then; the report's peak says how far it went.
    if (mb > RSS_LIMIT_MB && first && report.violations.length < 20)
      report.violations.push(
        `resident memory ${mb} MB, over memory_limit + 256 MB (${RSS_LIMIT_MB} MB), during ${sending().slice(0, 200)}`,
      );
  }, 100);
  const user = (async () => {
    while (running) {
      const started = Date.now();
      try {
        const r = await fetch(`${url}/v2/user`, {
          headers: { authorization: `Bearer ${ADMIN}` },
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        await r.arrayBuffer();
      } catch {
        // no answer: the duration says it
      }
      const ms = Date.now() - started;
      if (ms > report.slowestUserMs) report.slowestUserMs = ms;
      if (ms > USER_CALL_LIMIT_MS && running && report.violations.length < 20)
        report.violations.push(
          `GET /v2/user took ${ms} ms (over ${USER_CALL_LIMIT_MS} ms) during ${sending().slice(0, 200)}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      clearInterval(rss);
      await user;
    },
  };
}

/** Keeps the three slowest answers. */
function noteSlow(report: FuzzReport, ms: number, what: string): void {
  if (report.slowest.length === 3 && ms <= report.slowest[2]!.ms) return;
  report.slowest.push({ ms, what: what.slice(0, 200) });
  report.slowest.sort((a, b) => b.ms - a.ms);
  report.slowest.length = Math.min(3, report.slowest.length);
}
