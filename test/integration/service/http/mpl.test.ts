/**
 * POST /v1/query/_mpl as clients meet it: the official @axiomhq/js client's MPL query (v2 and v1 formats),
 * the v3 Accept header, `apl` for `mpl`, parameters, warnings and custom_unit; every refusal a {code,
 * message} with the status the reference gives and, for the text's faults, its line and column; rights;
 * bounded answers; queries racing ingest and a deletion; and `ferry query --mpl`.
 */
import { Axiom } from '@axiomhq/js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFerry, startTestService, type TestService } from '../../../support/helpers.js';
import { metricsBody, type GenSeries } from '../../../support/otlp-metrics.js';

const T0 = 1_767_225_600;
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
const RANGE = { startTime: iso(T0), endTime: iso(T0 + 3600) };

let svc: TestService;
let ingest: string;

function gauge(metric: string, tags: GenSeries['tags'], from: number, n: number, step = 60): GenSeries {
  return {
    metric,
    kind: 'gauge',
    unit: 'By',
    tags,
    points: Array.from({ length: n }, (_, i) => ({ t: from + i * step, v: i + 1 })),
  };
}

async function send(dataset: string, series: GenSeries[]) {
  return svc.call('POST', '/v1/metrics', metricsBody(series), ingest, {
    'content-type': 'application/x-protobuf',
    'x-axiom-metrics-dataset': dataset,
  });
}

async function query(body: Record<string, unknown>, o: { token?: string; search?: string; accept?: string } = {}) {
  const r = await svc.call(
    'POST',
    `/v1/query/_mpl${o.search ?? ''}`,
    body,
    o.token,
    o.accept ? { accept: o.accept } : {},
  );
  return { status: r.status, type: r.headers.get('content-type'), body: (await r.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  svc = await startTestService();
  for (const name of ['hosts', 'racing'])
    expect((await svc.call('POST', '/v2/datasets', { name, kind: 'otel:metrics:v1' })).status).toBe(200);
  await svc.createDataset('events');
  ingest = await svc.apiToken({ '*': { ingest: ['create'] } });
  const series: GenSeries[] = [];
  for (let h = 0; h < 20; h++) series.push(gauge('mem', { host: `h${h}`, rack: `r${h % 2}` }, T0, 60));
  expect((await send('hosts', series)).status).toBe(200);
});
afterAll(async () => svc?.stop());

describe('POST /v1/query/_mpl', () => {
  it('answers the @axiomhq/js client: metrics-v2 by default, a bare array with metrics-v1', async () => {
    const token = await svc.apiToken({ hosts: { query: ['read'] } });
    const axiom = new Axiom({ token, edgeUrl: svc.url });
    const text = 'hosts:mem | where rack == "r0" | align to 10m using max | group by rack using sum';
    const v2 = (await axiom.query(text, { type: 'mpl', ...RANGE })) as Record<string, unknown>;
    expect(v2).toEqual({
      metadata: { group_keys: ['rack'], warnings: [], unit: 'By' },
      series: [
        {
          metric: 'mem',
          tags: { rack: 'r0' },
          start: T0,
          resolution: 600,
          data: [100, 200, 300, 400, 500, 600],
          summary: 600,
        },
      ],
    });
    const v1 = await axiom.query(text, { type: 'mpl', ...RANGE, format: 'metrics-v1' });
    expect(v1).toEqual([
      { metric: 'mem', tags: { rack: 'r0' }, start: T0, resolution: 600, data: [100, 200, 300, 400, 500, 600] },
    ]);
  });

  it('takes apl for mpl, the v3 Accept header, parameters, custom_unit and warnings', async () => {
    const v3 = await query(
      {
        apl: 'set custom_unit = "KiB"; set edition = 2025; param $w: Duration; hosts:mem | filter host == "h3" | map / 1024 | align to $w using last',
        params: { param__w: '30m', param__unused: '1' },
        ...RANGE,
      },
      { accept: 'application/vnd.metrics.v3+json' },
    );
    expect(v3.status).toBe(200);
    expect(v3.type).toContain('application/vnd.metrics.v3+json');
    expect(v3.body).toEqual({
      metadata: {
        group_keys: [],
        unit: 'By',
        custom_unit: 'KiB',
        warnings: [
          'the directive "edition" is not known to this service and was ignored',
          'These params were provided but not declared: $unused',
          '"filter" is deprecated: write "where"',
        ],
      },
      series: [
        { metric: 'mem', tags: { host: 'h3', rack: 'r1' }, start: T0, resolution: 1800, data: [30 / 1024, 60 / 1024] },
      ],
    });
  });

  it('samples the same series every time', async () => {
    const text = 'hosts:mem | sample 0.5 | align using count';
    const a = (await query({ mpl: text, ...RANGE })).body.series as { tags: { host: string } }[];
    const b = (await query({ mpl: text, ...RANGE })).body.series as { tags: { host: string } }[];
    expect(a.length).toBeGreaterThan(0);
    expect(a.length).toBeLessThan(20);
    expect(b.map((s) => s.tags.host)).toEqual(a.map((s) => s.tags.host));
  });

  it('refuses with {code, message}, naming line and column for the text', async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [
        { mpl: 'hosts:mem\n| align to 5m using median', ...RANGE },
        400,
        'line 2, column 21: Unsupported align function: median',
      ],
      [{ mpl: 'hosts:mem | where host =~ "x"', ...RANGE }, 400, 'line 1, column 24'],
      [
        { mpl: 'hosts:mem | align to 5m using avg | where host == "x"', ...RANGE },
        400,
        'filters (`where`) must come before',
      ],
      [{ mpl: 'hosts:mem | where host == $h', ...RANGE }, 400, 'line 1, column 27: The param $h is not defined'],
      [
        { mpl: 'param $h: string; hosts:mem | where host == $h', ...RANGE },
        400,
        'The following params were declared but not provided: h',
      ],
      [
        { mpl: 'param $h: int; hosts:mem | where host == $h', params: { param__h: '"x"' }, ...RANGE },
        400,
        'params.param__h: expected a int',
      ],
      [{ mpl: 'hosts:mem[1h..]', ...RANGE }, 400, 'Time is provided both in the query and as a parameter'],
      [{ mpl: 'hosts:mem' }, 400, 'the query has no time range'],
      [{ mpl: 'hosts:mem | map / 0', ...RANGE }, 400, 'line 1, column 13: map / 0 divides by zero'],
      [
        { mpl: 'hosts:mem | bucket to 5m using interpolate_cumulative_histogram(0.99)', ...RANGE },
        400,
        'takes its conversion first',
      ],
      [
        { mpl: 'hosts:mem | align to 5m using avg | extend rack = "x"', ...RANGE },
        400,
        'line 1, column 44: extend adds tags, and "rack" is already a tag',
      ],
      [{ mpl: 'hosts:mem | where host == #/(/', ...RANGE }, 400, 'missing )'],
      [{ mpl: '(hosts:mem, racing:mem) | compute x using +', ...RANGE }, 400, 'a query reads one dataset'],
      [
        { mpl: `hosts:mem | where ${'('.repeat(300)}host == "a"${')'.repeat(300)}`, ...RANGE },
        400,
        'recursion depth exceeded',
      ],
      [
        { mpl: 'hosts:mem | align to 1s using avg', startTime: iso(T0), endTime: iso(T0 + 86400 * 3) },
        400,
        'more than 2000000 values',
      ],
      [{ mpl: 'nosuch:mem', ...RANGE }, 404, 'dataset "nosuch" not found'],
      [{ mpl: 'events:mem', ...RANGE }, 400, 'MPL queries metrics datasets'],
      [{ mpl: '', ...RANGE }, 400, 'mpl must be a non-empty string'],
      [{ mpl: 'hosts:mem', startTime: 'yesterday', endTime: 'now' }, 400, 'startTime "yesterday" is not a time'],
    ];
    const far = { startTime: '2000-01-01T00:00:00Z', endTime: '2030-01-01T00:00:00Z' };
    cases.push(
      [
        { mpl: 'hosts:mem | align to 1s using avg | map fill::prev | align using last', ...far },
        400,
        'filling gaps would make',
      ],
      [
        {
          mpl: 'param $w: Duration; hosts:mem | align to $w using avg',
          params: { param__w: `${'9'.repeat(400)}s` },
          ...RANGE,
        },
        400,
        'params.param__w: expected a duration from a second to ten years',
      ],
      [{ mpl: `hosts:mem[0..${'9'.repeat(30)}]` }, 400, 'falls outside 1970 to 9999'],
      [{ mpl: 'hosts:mem[0..+1000000000000y]' }, 400, 'a relative time reaches past ten years'],
      [
        { mpl: 'hosts:mem | offset 99999999999y | offset -99999999999y', ...RANGE },
        400,
        'an offset reaches past ten years',
      ],
      [{ mpl: `hosts:mem${' | map + 1'.repeat(250)}`, ...RANGE }, 400, '(service.query_limits.max_stages)'],
      [
        { mpl: `hosts:mem | where host in [${Array.from({ length: 10_001 }, (_, i) => i).join(',')}]`, ...RANGE },
        400,
        'in arrays hold more than 10000 values',
      ],
      [
        { mpl: 'param $x: string; hosts:mem', params: { param__x: `"${'x'.repeat(300_000)}"` }, ...RANGE },
        400,
        '(service.query_limits.max_query_bytes)',
      ],
    );
    for (const [body, status, message] of cases) {
      const r = await query(body);
      expect({ status: r.status, code: r.body.code }, JSON.stringify(body).slice(0, 100)).toEqual({
        status,
        code: status,
      });
      expect(r.body.message as string).toContain(message);
    }
    expect((await query({ mpl: 'hosts:mem', ...RANGE }, { search: '?format=csv' })).status).toBe(400);
  });

  it('reads tags of any name and values with any character', async () => {
    for (const where of [
      'host == "a\u0000b"',
      '`` == "x"',
      '`*` == "x"',
      '`$` is string',
      '`a/b~c` != "x"',
      'host in ["h1", 2, true, null]',
    ]) {
      const r = await query({ mpl: `hosts:mem | where ${where} | align using count | group using sum`, ...RANGE });
      expect(r.status, where).toBe(200);
    }
    const all = await query({
      mpl: 'hosts:mem | where `a/b~c` != "x" | align using count | group using sum',
      ...RANGE,
    });
    expect((all.body.series as { data: number[] }[])[0]!.data).toEqual([20 * 60]);
    const some = await query({
      mpl: 'hosts:mem | where host in ["h1", "h2", 3] | align using count | group using sum',
      ...RANGE,
    });
    expect((some.body.series as { data: number[] }[])[0]!.data).toEqual([2 * 60]);
  });

  it('checks query rights on the dataset: another dataset, or none, is refused', async () => {
    const other = await svc.apiToken({ racing: { query: ['read'] } });
    const r = await query({ mpl: 'hosts:mem | align using max', ...RANGE }, { token: other });
    expect(r.status).toBe(403);
    expect(r.body.message).toContain('lacks the query|read capability on dataset "hosts"');
    const none = await query({ mpl: 'nosuch:mem', ...RANGE }, { token: other });
    expect(none.status).toBe(403);
    const ingestOnly = await query({ mpl: 'hosts:mem', ...RANGE }, { token: ingest });
    expect(ingestOnly.status).toBe(403);
  });

  it('answers 200 or 404, never 5xx, while exports land and the dataset is deleted', async () => {
    const seed = Number(process.env.FERRY_SEED ?? Date.now() % 100_000);
    let state = seed;
    const rand = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const statuses: number[] = [];
    const counts: number[] = [];
    let exported = 0;
    const exports = (async () => {
      for (let k = 0; k < 20; k++) {
        const r = await send('racing', [gauge('mem', { host: `x${Math.floor(rand() * 5)}` }, T0 + k * 60, 1)]);
        if (r.status === 200) exported++;
        else expect(r.status, `seed ${seed}`).toBe(404);
      }
    })();
    const queries = Array.from({ length: 4 }, async () => {
      for (let k = 0; k < 10; k++) {
        const r = await query({ mpl: 'racing:mem | align using count | group using sum', ...RANGE });
        statuses.push(r.status);
        if (r.status === 200) {
          const series = r.body.series as { data: number[] }[];
          counts.push(series[0]?.data[0] ?? 0);
        }
      }
    });
    await new Promise((r) => setTimeout(r, 20 + rand() * 40));
    const deleted = svc.call('DELETE', '/v1/datasets/racing');
    await Promise.all([exports, ...queries, deleted]);
    expect((await deleted).status).toBe(204);
    expect(
      statuses.filter((s) => s !== 200 && s !== 404),
      `seed ${seed}`,
    ).toEqual([]);
    expect(statuses.every((s) => s < 500)).toBe(true);
    // A query sees whole exports: never more points than were sent.
    expect(Math.max(0, ...counts)).toBeLessThanOrEqual(exported);
  });
});

describe('ferry query --mpl', () => {
  it('prints a row a point, takes --param, and exits non-zero with the line and column of a fault', async () => {
    const r = await runFerry(svc.url, [
      'query',
      '--mpl',
      'param $h: string; hosts:mem | where host == $h | align to 20m using max',
      '--param',
      'h="h1"',
      '--start',
      iso(T0),
      '--end',
      iso(T0 + 3600),
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        '_time                 metric  host  rack  value',
        '--------------------  ------  ----  ----  -----',
        '2026-01-01T00:00:00Z  mem     h1    r1       20',
        '2026-01-01T00:20:00Z  mem     h1    r1       40',
        '2026-01-01T00:40:00Z  mem     h1    r1       60',
        '(3 rows)',
        '',
      ].join('\n'),
    );
    const nd = await runFerry(svc.url, [
      'query',
      '--mpl',
      `hosts:mem[${T0}..+1h] | align using max | group using max`,
      '-f',
      'ndjson',
    ]);
    expect(nd.stdout).toBe('{"_time":"2026-01-01T00:00:00Z","metric":"mem","value":60}\n');
    const bad = await runFerry(svc.url, ['query', '--mpl', 'hosts:mem | align to 5m using median']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('query failed (400): line 1, column 31: Unsupported align function: median');
  });
});
