import { Axiom } from '@axiomhq/js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN, startTestService, type TestService } from '../../../support/helpers.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../src/service/query/limits.js';

let svc: TestService;
let ingestToken: string;
const N = 10_000;
const PER_TIMESTAMP = 100; // many events share each timestamp: paging must neither lose nor repeat them
const BASE = Date.UTC(2024, 0, 1);
const RANGE = { startTime: '2023-12-31T00:00:00Z', endTime: '2024-01-02T00:00:00Z' };

beforeAll(async () => {
  svc = await startTestService();
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  await svc.createDataset('pages');
  await svc.createDataset('other');
  ingestToken = await svc.apiToken({ '*': { ingest: ['create'], query: ['read'] } });
  for (let b = 0; b < N; b += 2500) {
    const lines: string[] = [];
    for (let i = b; i < b + 2500; i++)
      lines.push(JSON.stringify({ _time: new Date(BASE + Math.floor(i / PER_TIMESTAMP) * 1000).toISOString(), id: i }));
    const r = await svc.call('POST', '/v1/ingest/pages', lines.join('\n'), ingestToken, {
      'content-type': 'application/x-ndjson',
    });
    expect(r.status).toBe(200);
  }
  await svc.call('POST', '/v1/ingest/other', '{"x":1}', ingestToken, { 'content-type': 'application/x-ndjson' });
});
afterAll(async () => svc?.stop());

interface Page {
  ids: number[];
  times: string[];
  minCursor: string;
  maxCursor: string;
}

async function page(apl: string, body: Record<string, unknown>): Promise<Page> {
  const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl, ...body });
  const res = (await r.json()) as {
    status: { minCursor: string; maxCursor: string };
    tables: { fields: { name: string }[]; columns: unknown[][] }[];
  };
  expect(r.status).toBe(200);
  const t = res.tables[0]!;
  const col = (n: string) => t.columns[t.fields.findIndex((f) => f.name === n)]!;
  return {
    ids: col('id') as number[],
    times: col('_time') as string[],
    minCursor: res.status.minCursor,
    maxCursor: res.status.maxCursor,
  };
}

describe('legacy summaries with rows that have no time', () => {
  it('answer 200: a datatable unioned with a dataset and summarised by a time bin (found by the fuzz)', async () => {
    const apl = "datatable(a:long)[1,2] | union ['other'] | summarize c = count() by bin(_time, 1h)";
    const r = await svc.call('POST', '/v1/query/_apl?format=legacy', { apl, ...RANGE });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { buckets: { series: { startTime: string }[]; totals: unknown[] } };
    expect(body.buckets.series.every((s) => typeof s.startTime === 'string')).toBe(true);
  });
});

describe('pagination over 10,000 events with equal timestamps', () => {
  for (const dir of ['desc', 'asc'] as const) {
    it(`cursor paging (${dir}) returns every event exactly once, in order`, async () => {
      const seen: number[] = [];
      let cursor: string | undefined;
      for (let guard = 0; guard < 100; guard++) {
        const p = await page(`['pages'] | sort by _time ${dir} | take 1000`, {
          ...RANGE,
          ...(cursor ? { cursor } : {}),
        });
        seen.push(...p.ids);
        const next = dir === 'desc' ? p.minCursor : p.maxCursor;
        // The end: an empty page echoes the cursor given (spec: Pagination rules).
        if (cursor !== undefined && next === cursor) break;
        if (p.ids.length < 1000) break;
        cursor = next;
      }
      expect(seen).toHaveLength(N);
      expect(new Set(seen).size).toBe(N);
      // Within a timestamp the order follows ingest order in the direction of the sort.
      const expected = Array.from({ length: N }, (_, i) => i);
      expect(seen).toEqual(dir === 'asc' ? expected : expected.reverse());
    });

    it(`timestamp paging (${dir}) covers every event, with overlap the client removes`, async () => {
      const seen = new Set<number>();
      let bound: string | undefined;
      for (let guard = 0; guard < 100; guard++) {
        const body =
          dir === 'desc'
            ? { startTime: RANGE.startTime, endTime: bound ?? RANGE.endTime }
            : { startTime: bound ?? RANGE.startTime, endTime: RANGE.endTime };
        const p = await page(`['pages'] | sort by _time ${dir} | take 1000`, body);
        const before = seen.size;
        for (const id of p.ids) seen.add(id);
        if (p.ids.length === 0 || seen.size === before) break;
        bound = p.times[p.times.length - 1];
      }
      expect(seen.size).toBe(N);
    });
  }

  it("timestamp paging by the spec's rule (the bound moved 1 ns past the last row) ends with an empty page, even when the last row sits on the range's bound", async () => {
    // Whole seconds here: the next bound is the last row's second plus or minus one nanosecond.
    const step = (t: string, dir: 'asc' | 'desc') =>
      dir === 'asc'
        ? t.replace(/Z$/, '.000000001Z')
        : `${new Date(Date.parse(t) - 1000).toISOString().slice(0, 19)}.999999999Z`;
    const first = new Date(BASE).toISOString();
    const last = new Date(BASE + (N / PER_TIMESTAMP - 1) * 1000).toISOString();
    for (const dir of ['asc', 'desc'] as const) {
      const seen: number[] = [];
      let range = { startTime: first, endTime: last };
      let pages = 0;
      for (; pages < 100; pages++) {
        const p = await page(`['pages'] | sort by _time ${dir} | take 1000`, range);
        if (p.ids.length === 0) break;
        seen.push(...p.ids);
        const bound = step(p.times[p.times.length - 1]!, dir);
        range = dir === 'asc' ? { ...range, startTime: bound } : { ...range, endTime: bound };
      }
      expect(pages, dir).toBe(N / 1000);
      expect(new Set(seen).size, dir).toBe(N);
      // The request that found the end had its start after its end.
      const ns = (t: string) => {
        const frac = /\.(\d+)Z$/.exec(t)?.[1] ?? '';
        return BigInt(Date.parse(t.replace(/\.\d+Z$/, 'Z'))) * 1_000_000n + BigInt(frac.padEnd(9, '0') || '0');
      };
      expect(ns(range.startTime) > ns(range.endTime), `${dir}: ${JSON.stringify(range)}`).toBe(true);
    }
  });

  it('the cursor is also accepted as a query parameter, and includeCursor includes its row', async () => {
    const first = await page("['pages'] | take 5", RANGE);
    const r = await svc.call('POST', `/v1/datasets/_apl?format=tabular&cursor=${first.minCursor}`, {
      apl: "['pages'] | take 5",
      ...RANGE,
    });
    const res = (await r.json()) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] };
    const ids = res.tables[0]!.columns[res.tables[0]!.fields.findIndex((f) => f.name === 'id')]!;
    expect(ids).toEqual([9994, 9993, 9992, 9991, 9990]);
    const incl = await page("['pages'] | take 5", { ...RANGE, cursor: first.minCursor, includeCursor: true });
    expect(incl.ids).toEqual([9995, 9994, 9993, 9992, 9991]);
  });

  it('the page size is the lowest of the query limit, the request limit and the server default of 1000', async () => {
    expect((await page("['pages']", RANGE)).ids).toHaveLength(1000);
    expect((await page("['pages'] | take 20", RANGE)).ids).toHaveLength(20);
    expect((await page("['pages'] | take 20", { ...RANGE, limit: 7 })).ids).toHaveLength(7);
    expect((await page("['pages'] | take 5", { ...RANGE, limit: 7 })).ids).toHaveLength(5);
    expect((await page("['pages']", { ...RANGE, limit: 2500 })).ids).toHaveLength(2500);
    for (const limit of [0, -1, 1.5, '10', true]) {
      const bad = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: "['pages']", ...RANGE, limit });
      expect(bad.status, JSON.stringify(limit)).toBe(400);
      expect(((await bad.json()) as { message: string }).message).toMatch(/^limit must be a positive integer/);
    }
    const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: "['pages']", ...RANGE });
    const res = (await r.json()) as { status: { messages?: { code: string }[] } };
    expect(res.status.messages?.map((m) => m.code)).toContain('default_limit_warning');
  });

  it('the default page applies to events joined, looked up or expanded, not to summaries', async () => {
    const rows = async (apl: string) => {
      const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl, ...RANGE });
      const res = (await r.json()) as { tables: { columns: unknown[][] }[]; status: { messages?: { code: string }[] } };
      return {
        n: res.tables[0]!.columns[0]!.length,
        warned: (res.status.messages ?? []).some((m) => m.code === 'default_limit_warning'),
      };
    };
    const kinds = "datatable(parity:long, kind:string)[0, 'even', 1, 'odd']";
    expect(await rows(`['pages'] | extend parity = id % 2 | lookup (${kinds}) on parity`)).toEqual({
      n: 1000,
      warned: true,
    });
    expect(await rows(`['pages'] | extend parity = id % 2 | join kind=inner (${kinds}) on parity`)).toEqual({
      n: 1000,
      warned: true,
    });
    expect(await rows("['pages'] | extend t = dynamic([1, 2]) | mv-expand t")).toEqual({ n: 1000, warned: true });
    expect(await rows("['pages'] | summarize count() by id")).toEqual({ n: N, warned: false });
    expect(await rows("['pages'] | summarize count() by id | lookup (datatable(id:long, x:long)[1, 1]) on id")).toEqual(
      { n: N, warned: false },
    );
  });

  it('sample keeps about the given proportion of rows', async () => {
    const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', {
      apl: "['pages'] | sample 0.3 | count",
      ...RANGE,
    });
    const n = ((await r.json()) as { tables: { columns: number[][] }[] }).tables[0]!.columns[0]![0]!;
    // Binomial(10,000, 0.3): mean 3,000, standard deviation 46; ±400 is far beyond chance.
    expect(n).toBeGreaterThan(2600);
    expect(n).toBeLessThan(3400);
  });

  it('a malformed cursor is a 400', async () => {
    const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: "['pages']", cursor: 'not a cursor' });
    expect(r.status).toBe(400);
  });
});

describe('query access', () => {
  it('an API token needs query rights on every dataset a query reads; a PAT may query', async () => {
    const onlyPages = await svc.apiToken({ pages: { query: ['read'] } });
    const ok = await svc.call(
      'POST',
      '/v1/datasets/_apl?format=tabular',
      { apl: "['pages'] | count", ...RANGE },
      onlyPages,
    );
    expect(ok.status).toBe(200);
    const denied = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: "['other'] | count" }, onlyPages);
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { message: string }).message).toContain('query|read');
    const ingestOnly = await svc.apiToken({ pages: { ingest: ['create'] } });
    expect(
      (await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['pages'] | count" }, ingestOnly)).status,
    ).toBe(403);
    expect((await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['pages'] | count" }, ADMIN)).status).toBe(
      200,
    );
    expect(
      (await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['pages'] | count" }, 'xaat-bogus')).status,
    ).toBe(401);
  });
});

describe('@axiomhq/js query()', () => {
  it('tabular (the default): events() yields what was ingested', async () => {
    const client = new Axiom({ token: ingestToken, url: svc.url });
    const res = await client.query("['pages'] | where id < 3 | project id | sort by id asc", RANGE);
    expect(res.status.rowsMatched).toBe(3);
    expect([...res.tables[0]!.events()].map((e) => e.id)).toEqual([0, 1, 2]);
  });

  it('tabular summaries carry agg and groups', async () => {
    const client = new Axiom({ token: ingestToken, url: svc.url });
    const res = await client.query("['pages'] | summarize n = count(), max(id) by bin(_time, 1m)", RANGE);
    const t = res.tables[0]!;
    expect(t.fields.map((f) => f.name)).toEqual(['_time', 'n', 'max_id']);
    expect(t.fields[1]!.agg?.name).toBe('count');
    expect(t.columns![1]).toEqual([6000, 4000]);
    expect(res.tables.map((x) => x.name)).toEqual(['0', '_totals']);
  });

  it('legacy format: matches with _time, _sysTime, _rowId and data', async () => {
    const client = new Axiom({ token: ingestToken, url: svc.url });
    const res = await client.query("['pages'] | where id == 42", { ...RANGE, format: 'legacy' });
    expect(res.matches).toHaveLength(1);
    const m = res.matches![0]!;
    expect(m.data).toEqual({ id: 42 });
    expect(m._time).toBe('2024-01-01T00:00:00Z');
    expect(typeof m._rowId).toBe('string');
    expect(res.status.rowsMatched).toBe(1);
  });

  it('legacy format of a summary by time: series per bucket and totals', async () => {
    const client = new Axiom({ token: ingestToken, url: svc.url });
    const res = await client.query("['pages'] | summarize c = count() by bin(_time, 1m)", {
      ...RANGE,
      format: 'legacy',
    });
    expect(res.buckets.series).toHaveLength(2);
    expect(res.buckets.series![0]).toMatchObject({
      startTime: '2024-01-01T00:00:00Z',
      endTime: '2024-01-01T00:01:00Z',
      groups: [{ group: {}, aggregations: [{ op: 'c', value: 6000 }] }],
    });
    expect(res.buckets.totals).toEqual([{ id: 0, group: {}, aggregations: [{ op: 'c', value: N }] }]);
  });
});

describe('legacy query endpoint POST /v1/datasets/{dataset}/query', () => {
  it('@axiomhq/js queryLegacy: filter tree, limit and order give matches', async () => {
    const client = new Axiom({ token: ingestToken, url: svc.url });
    const res = await client.queryLegacy('pages', {
      ...RANGE,
      resolution: 'auto',
      filter: {
        op: 'and',
        field: '',
        children: [
          { op: '>=', field: 'id', value: 10 },
          { op: '<', field: 'id', value: 13 },
        ],
      },
      order: [{ field: '_time', desc: false }],
      limit: 2,
    } as never);
    expect(res.matches!.map((m) => m.data.id)).toEqual([10, 11]);
    expect(res.status.rowsMatched).toBe(3);
  });

  it('aggregations with groupBy and a resolution give series and totals', async () => {
    const r = await svc.call(
      'POST',
      '/v1/datasets/pages/query',
      {
        ...RANGE,
        resolution: '1m0s',
        aggregations: [
          { op: 'count', field: '*', alias: 'n' },
          { op: 'max', field: 'id' },
        ],
        filter: { op: 'exists', field: 'id' },
        groupBy: [],
      },
      ingestToken,
    );
    const res = (await r.json()) as {
      buckets: {
        series: { startTime: string; groups: { aggregations: { op: string; value: number }[] }[] }[];
        totals: { aggregations: { op: string; value: number }[] }[];
      };
    };
    expect(r.status).toBe(200);
    expect(res.buckets.series.map((s) => s.startTime)).toEqual(['2024-01-01T00:00:00Z', '2024-01-01T00:01:00Z']);
    expect(res.buckets.series[0]!.groups[0]!.aggregations).toEqual([
      { op: 'n', value: 6000 },
      { op: 'max_id', value: 5999 },
    ]);
    expect(res.buckets.totals[0]!.aggregations).toEqual([
      { op: 'n', value: N },
      { op: 'max_id', value: N - 1 },
    ]);
  });

  it('accepts the zero values axiom-go sends for unset fields', async () => {
    const r = await svc.call(
      'POST',
      '/v1/datasets/pages/query?streaming-duration=60s&nocache=True',
      {
        startTime: '0001-01-01T00:00:00Z',
        endTime: '0001-01-01T00:00:00Z',
        resolution: '',
        aggregations: null,
        filter: { op: '', field: '', value: null, caseSensitive: false, children: null },
        groupBy: null,
        order: null,
        limit: 3,
        virtualFields: null,
        project: null,
        cursor: '',
        includeCursor: false,
      },
      ingestToken,
    );
    const res = (await r.json()) as { matches: { data: { id: number } }[] };
    expect(r.status).toBe(200);
    expect(res.matches.map((m) => m.data.id)).toEqual([9999, 9998, 9997]);
  });

  it('cursor paging through the legacy endpoint visits every event once', async () => {
    const seen = new Set<number>();
    let cursor = '';
    for (let guard = 0; guard < 20; guard++) {
      const r = await svc.call(
        'POST',
        '/v1/datasets/pages/query',
        { ...RANGE, limit: 1000, order: [{ field: '_time', desc: true }], cursor },
        ingestToken,
      );
      const res = (await r.json()) as { status: { minCursor: string }; matches: { data: { id: number } }[] };
      for (const m of res.matches) {
        expect(seen.has(m.data.id)).toBe(false);
        seen.add(m.data.id);
      }
      if (res.matches.length < 1000 || res.status.minCursor === cursor) break;
      cursor = res.status.minCursor;
    }
    expect(seen.size).toBe(N);
  });

  it('virtual fields, project with aliases, and errors', async () => {
    const r = await svc.call(
      'POST',
      '/v1/datasets/pages/query',
      {
        ...RANGE,
        virtualFields: [{ alias: 'even', expr: 'id % 2 == 0' }],
        filter: { op: '==', field: 'even', value: true },
        project: [{ field: 'id', alias: 'ident' }],
        limit: 2,
      },
      ingestToken,
    );
    const res = (await r.json()) as { matches: { data: Record<string, unknown> }[] };
    expect(res.matches.map((m) => m.data)).toEqual([{ ident: 9998 }, { ident: 9996 }]);
    const bad = await svc.call(
      'POST',
      '/v1/datasets/pages/query',
      { filter: { op: 'near', field: 'id', value: 1 } },
      ingestToken,
    );
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toContain('filter.op: unknown filter op "near"');
    expect((await svc.call('POST', '/v1/datasets/nope/query', {}, ingestToken)).status).toBe(404);
    let deep: object = { op: 'exists', field: 'id' };
    for (let i = 0; i < 100; i++) deep = { op: 'and', children: [deep] };
    const tooDeep = await svc.call('POST', '/v1/datasets/pages/query', { filter: deep }, ingestToken);
    expect(tooDeep.status).toBe(400);
    expect(((await tooDeep.json()) as { message: string }).message).toContain('nested too deeply');
    const noRights = await svc.apiToken({ other: { query: ['read'] } });
    expect((await svc.call('POST', '/v1/datasets/pages/query', {}, noRights)).status).toBe(403);
  });
});

describe('query time limit (service.query_timeout)', () => {
  it('interrupts a query that runs too long with a 408, and the service keeps answering', async () => {
    const small = await startTestService({ queryTimeoutMs: 150 });
    try {
      await small.createDataset('big');
      const token = await small.apiToken();
      const lines = Array.from({ length: 4000 }, (_, i) => JSON.stringify({ k: 1, s: `value-${i}` })).join('\n');
      expect(
        (await small.call('POST', '/v1/ingest/big', lines, token, { 'content-type': 'application/x-ndjson' })).status,
      ).toBe(200);
      // 4,000 × 4,000 joined rows, each hashed: far longer than 150 ms.
      const slow = await small.call('POST', '/v1/datasets/_apl?format=tabular', {
        apl: "['big'] | join kind=inner (['big']) on k | summarize dcount(hash_sha256(strcat(s, s1)))",
      });
      expect(slow.status).toBe(408);
      expect(((await slow.json()) as { message: string }).message).toMatch(
        /ran longer than 0.15 s and was stopped \(service.query_timeout\)/,
      );
      const fast = await small.call('POST', '/v1/datasets/_apl?format=tabular', { apl: "['big'] | count" });
      expect(fast.status).toBe(200);
      expect(((await fast.json()) as { tables: { columns: unknown[][] }[] }).tables[0]!.columns).toEqual([[4000]]);
    } finally {
      await small.stop();
    }
  });
});

describe('query time limit for JavaScript functions', () => {
  it('stops a chunk of long series_fir calls at the limit (no interrupt reaches them), and the next query on the connection has no stale limit', async () => {
    // The ranges and the filtered series take hundreds of MB for the chunk, and more as estimated (a
    // number of a range or a series is counted at its longest): past max_made_text_bytes' default.
    const small = await startTestService({
      queryTimeoutMs: 1000,
      memoryLimitBytes: 2 * 1024 ** 3,
      queryLimits: { ...DEFAULT_QUERY_LIMITS, maxMadeTextBytes: 2 ** 36 },
    });
    try {
      // 1,000 rows, each a filter of 49M multiply-adds: far longer than the test may take, in one DuckDB chunk.
      const slow = await small.call('POST', '/v1/datasets/_apl?format=tabular', {
        apl:
          'print a = range(1, 1000) | mv-expand a | extend i = tolong(a) ' +
          '| extend s = series_fir(range(i, i + 7000), range(1, 7000)) | summarize sum(array_length(s))',
      });
      expect(slow.status).toBe(408);
      expect(((await slow.json()) as { message: string }).message).toMatch(/ran longer than 1 s/);
      for (let i = 0; i < 4; i++) {
        const fast = await small.call('POST', '/v1/datasets/_apl?format=tabular', {
          apl: 'print s = series_fir(dynamic([1, 2, 3, 4]), dynamic([1, 1]), false)',
        });
        expect(fast.status).toBe(200);
        expect(((await fast.json()) as { tables: { columns: unknown[][] }[] }).tables[0]!.columns).toEqual([
          [[1, 3, 5, 7]],
        ]);
      }
    } finally {
      await small.stop();
    }
  }, 20_000);
});
