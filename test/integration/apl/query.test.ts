import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../support/helpers.js';

interface Tabular {
  status: Record<string, unknown>;
  tables: {
    name: string;
    fields: { name: string; type: string; agg?: { name: string; fields: string[]; args: unknown[] } }[];
    order: unknown[];
    groups: unknown[];
    buckets?: unknown;
    columns: unknown[][];
  }[];
  datasetNames: string[];
  fieldsMetaMap: Record<string, unknown[]>;
}

let svc: TestService;
const RANGE = { startTime: '2024-01-01T00:00:00Z', endTime: '2024-01-02T00:00:00Z' };

/** 20 events, one a minute from 2024-01-01T00:00Z: status 500 every 5th, POST every 3rd, two cities. */
function events(): Record<string, unknown>[] {
  return Array.from({ length: 20 }, (_, i) => ({
    _time: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString(),
    method: i % 3 ? 'GET' : 'POST',
    status: i % 5 ? 200 : 500,
    dur: i * 1.5,
    uri: `/api/v${i % 2}/Item-${i}`,
    geo: { city: i % 2 ? 'Paris' : 'Berlin' },
    ...(i === 7 ? { note: 'foo-bar baz' } : {}),
  }));
}

async function tabular(apl: string, body: object = RANGE): Promise<Tabular> {
  const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl, ...body });
  const json = await r.json();
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(json)}`);
  return json as Tabular;
}

/** Rows of table 0 as objects. */
async function rows(apl: string): Promise<Record<string, unknown>[]> {
  const t = (await tabular(apl)).tables[0]!;
  const n = t.columns[0]?.length ?? 0;
  return Array.from({ length: n }, (_, i) => Object.fromEntries(t.fields.map((f, j) => [f.name, t.columns[j]![i]])));
}

async function value(expr: string): Promise<unknown> {
  return (await rows(`print v = ${expr}`))[0]!.v;
}

async function status(apl: string): Promise<{ code: number; message: string; http: number }> {
  const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl, ...RANGE });
  return { ...((await r.json()) as { code: number; message: string }), http: r.status };
}

beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('web');
  const token = await svc.apiToken();
  const r = await svc.call(
    'POST',
    '/v1/ingest/web',
    events()
      .map((e) => JSON.stringify(e))
      .join('\n'),
    token,
    { 'content-type': 'application/x-ndjson' },
  );
  expect(r.status).toBe(200);
});
afterAll(async () => svc?.stop());

describe('tabular operators', () => {
  it('scans newest first with _time, _sysTime, then fields alphabetically, and the tabular envelope', async () => {
    const res = await tabular("['web'] | take 3");
    const t = res.tables[0]!;
    expect(t.fields.map((f) => f.name)).toEqual([
      '_time',
      '_sysTime',
      'dur',
      'geo.city',
      'method',
      'note',
      'status',
      'uri',
    ]);
    expect(t.fields.map((f) => f.type)).toEqual([
      'datetime',
      'datetime',
      'float',
      'string',
      'string',
      'string',
      'integer',
      'string',
    ]);
    expect(t.columns[0]).toEqual(['2024-01-01T00:19:00Z', '2024-01-01T00:18:00Z', '2024-01-01T00:17:00Z']);
    expect(t.order).toEqual([{ field: '_time', desc: true }]);
    expect(res.datasetNames).toEqual(['web']);
    expect(res.status).toMatchObject({ rowsExamined: 20, rowsMatched: 20, isPartial: false, numGroups: 0 });
    expect(res.status.elapsedTime as number).toBeGreaterThan(0);
    expect(res.fieldsMetaMap.web!.map((f) => (f as { name: string }).name).sort()).toEqual([
      'dur',
      'geo.city',
      'method',
      'note',
      'status',
      'uri',
    ]);
  });

  it('where, count and rowsMatched', async () => {
    const res = await tabular("['web'] | where status == 500 | count");
    expect(res.tables[0]!.fields).toEqual([{ name: 'count', type: 'integer' }]);
    expect(res.tables[0]!.columns).toEqual([[4]]);
    expect(res.status).toMatchObject({ rowsExamined: 20, rowsMatched: 4 });
    const raw = await tabular("['web'] | where method == 'POST' | take 2");
    expect(raw.status.rowsMatched).toBe(7);
  });

  it('the time range bounds the rows, inclusive at both ends, and rowsExamined counts only those', async () => {
    const res = await tabular("['web'] | summarize n = count()", {
      startTime: '2024-01-01T00:05:00Z',
      endTime: '2024-01-01T00:09:00Z',
    });
    expect(res.tables[0]!.columns).toEqual([[5]]);
    expect(res.status).toMatchObject({
      rowsExamined: 5,
      rowsMatched: 5,
      minBlockTime: '2024-01-01T00:05:00Z',
      maxBlockTime: '2024-01-01T00:09:00Z',
    });
    const rel = await tabular("['web'] | count", { startTime: 'now-1h' });
    expect(rel.tables[0]!.columns).toEqual([[0]]);
  });

  it('rowsMatched counts the filtered rows before a sort/take, a summary or nothing', async () => {
    expect((await tabular("['web'] | where status == 500 | sort by dur asc | take 1")).status.rowsMatched).toBe(4);
    expect((await tabular("['web'] | where status == 500 | summarize count() by method")).status.rowsMatched).toBe(4);
    expect((await tabular("['web'] | where status == 404 | take 3")).status.rowsMatched).toBe(0);
    expect(
      (await tabular("['web'] | where status == 500 | extend x = 1 | where method == 'GET' | distinct uri")).status
        .rowsMatched,
    ).toBe(2);
  });

  it('extend replaces in place, project keeps the listed order, renames and computes', async () => {
    const r = await rows(
      "['web'] | where status == 500 | extend status = status * 2 | project status, m = tolower(method), ['geo.city'] | take 2",
    );
    expect(r).toEqual([
      { status: 1000, m: 'post', 'geo.city': 'Paris' },
      { status: 1000, m: 'get', 'geo.city': 'Berlin' },
    ]);
  });

  it('project-away, project-keep with wildcards, project-rename, project-reorder', async () => {
    const t1 = (await tabular("['web'] | project-away _sysTime, ['geo.']*, note | take 1")).tables[0]!;
    expect(t1.fields.map((f) => f.name)).toEqual(['_time', 'dur', 'method', 'status', 'uri']);
    const t2 = (await tabular("['web'] | project-keep u*, _time | take 1")).tables[0]!;
    expect(t2.fields.map((f) => f.name)).toEqual(['_time', 'uri']);
    const t3 = (await tabular("['web'] | project-rename code = status | project-reorder uri, code | take 1"))
      .tables[0]!;
    expect(t3.fields.map((f) => f.name).slice(0, 3)).toEqual(['uri', 'code', '_time']);
  });

  it('summarize names aggregates as Axiom does and carries agg metadata', async () => {
    const res = await tabular(
      "['web'] | summarize count(), countif(status == 500), sum(status), avg(dur), min(dur), max(_time), dcount(method), percentile(dur, 50), percentiles_array(dur, 50, 90) by ['geo.city'] | sort by ['geo.city'] asc",
    );
    const t = res.tables[0]!;
    expect(t.fields.map((f) => f.name)).toEqual([
      'geo.city',
      'count_',
      'countif_',
      'sum_status',
      'avg_dur',
      'min_dur',
      'max__time',
      'dcount_method',
      'percentile_dur_50',
      'percentiles_dur',
    ]);
    expect(t.fields[1]!.agg).toEqual({ name: 'count', fields: [], args: [] });
    expect(t.fields[8]!.agg).toEqual({ name: 'percentiles', fields: ['dur'], args: [50] });
    expect(t.groups).toEqual([{ name: 'geo.city' }]);
    // Berlin: even minutes 0..18 → dur 0,3,...,27; status 500 at 0, 10.
    expect(t.columns.map((c) => c[0])).toEqual([
      'Berlin',
      10,
      2,
      2600,
      13.5,
      0,
      '2024-01-01T00:18:00Z',
      2,
      12,
      [12, 24],
    ]);
    expect(res.status.numGroups).toBe(2);
  });

  it('summarize without by gives one row even when nothing matches', async () => {
    expect(
      await rows("['web'] | where status == 404 | summarize n = count(), s = sumif(dur, true), a = avg(dur)"),
    ).toEqual([{ n: 0, s: 0, a: null }]);
  });

  it('summarize by bin(_time) returns buckets, time-ascending rows and a _totals table', async () => {
    const res = await tabular("['web'] | summarize count() by bin(_time, 10m), method");
    const [t, totals] = res.tables;
    expect(t!.buckets).toEqual({ field: '_time', size: 600_000_000_000 });
    expect(t!.order).toEqual([
      { field: '_time', desc: false },
      { field: 'count_', desc: true },
    ]);
    expect(t!.columns).toEqual([
      ['2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', '2024-01-01T00:10:00Z', '2024-01-01T00:10:00Z'],
      ['GET', 'POST', 'GET', 'POST'],
      [6, 4, 7, 3],
    ]);
    expect(totals!.name).toBe('_totals');
    expect(totals!.buckets).toBeUndefined();
    expect(totals!.columns).toEqual([
      ['GET', 'POST'],
      [13, 7],
    ]);
  });

  it('take after a summary by time keeps the top groups in every bucket', async () => {
    const t = (await tabular("['web'] | summarize count() by bin(_time, 10m), method | take 1")).tables[0]!;
    expect(t.columns[1]).toEqual(['GET', 'GET']);
  });

  it('sort defaults to descending; top; distinct', async () => {
    expect((await rows("['web'] | sort by dur | take 2 | project dur")).map((r) => r.dur)).toEqual([28.5, 27]);
    expect((await rows("['web'] | top 2 by dur asc | project dur")).map((r) => r.dur)).toEqual([0, 1.5]);
    const d = await rows("['web'] | distinct method, status | sort by method asc, status asc");
    expect(d).toEqual([
      { method: 'GET', status: 200 },
      { method: 'GET', status: 500 },
      { method: 'POST', status: 200 },
      { method: 'POST', status: 500 },
    ]);
  });

  it('getschema lists the columns and their types', async () => {
    const r = await rows("['web'] | project _time, status, uri | getschema");
    expect(r).toEqual([
      { ColumnName: '_time', ColumnOrdinal: 0, DataType: 'System.DateTime', ColumnType: 'datetime' },
      { ColumnName: 'status', ColumnOrdinal: 1, DataType: 'System.Int64', ColumnType: 'long' },
      { ColumnName: 'uri', ColumnOrdinal: 2, DataType: 'System.String', ColumnType: 'string' },
    ]);
  });

  it('let, datatable and print sources', async () => {
    expect(
      await rows('let n = 2; datatable(a:long, b:string)[1, "x", 2, "y", 3, "z"] | where a >= n | project b'),
    ).toEqual([{ b: 'y' }, { b: 'z' }]);
    expect(await rows('print 1 + 2, s = "a"')).toEqual([{ print_0: 3, s: 'a' }]);
    expect(await rows("let codes = dynamic([500, 404]); ['web'] | where status in (codes) | count")).toEqual([
      { count: 4 },
    ]);
    expect(await rows("declare query_parameters (ds:string = 'web'); table(ds) | count")).toEqual([{ count: 20 }]);
    expect(await rows("let T = ['web'] | where status == 500; T | count")).toEqual([{ count: 4 }]);
  });
});

describe('Tier 2 operators', () => {
  it("union matches columns by name; withsource names each row's dataset", async () => {
    expect(
      await rows(
        "['web'] | where status == 500 | project uri | union (['web'] | where dur < 2 | project uri, dur) | sort by uri asc",
      ),
    ).toEqual([
      { uri: '/api/v0/Item-0', dur: null },
      { uri: '/api/v0/Item-0', dur: 0 },
      { uri: '/api/v0/Item-10', dur: null },
      { uri: '/api/v1/Item-1', dur: 1.5 },
      { uri: '/api/v1/Item-15', dur: null },
      { uri: '/api/v1/Item-5', dur: null },
    ]);
    expect(await rows("union withsource=src ['web'], (['web'] | take 1) | summarize n = count() by src")).toEqual([
      { src: 'web', n: 21 },
    ]);
  });

  it('search and where * look in every column, with term wildcards', async () => {
    const uris = async (q: string) => (await rows(`${q} | project uri | sort by uri asc`)).map((r) => r.uri);
    expect(await uris("['web'] | search 'item-19'")).toEqual(['/api/v1/Item-19']);
    expect(await uris("['web'] | search 'baz'")).toEqual(['/api/v1/Item-7']); // in the note field
    expect((await uris("['web'] | search uri:'item-19' or 'item-1*'")).length).toBe(11);
    expect(await uris("['web'] | search uri:'item-19' or 'item-1'")).toEqual(['/api/v1/Item-1', '/api/v1/Item-19']);
    expect((await uris("['web'] | search '*tem-1*'")).length).toBe(11);
    expect(await uris("['web'] | search kind=case_sensitive 'item-19'")).toEqual([]);
    expect(await uris("['web'] | where * has 'BAR'")).toEqual(['/api/v1/Item-7']);
    expect((await rows("search in (web) 'Paris' | count"))[0]!.count).toBe(10);
  });

  it('join: inner, innerunique and leftouter; lookup keeps one key column', async () => {
    const right = "(datatable(method:string, label:string)['GET', 'read', 'GET', 'fetch', 'PUT', 'write'])";
    expect((await rows(`['web'] | join kind=inner ${right} on method | count`))[0]!.count).toBe(26);
    expect((await rows(`['web'] | join kind=innerunique ${right} on method | count`))[0]!.count).toBe(2);
    expect((await rows(`['web'] | join kind=leftouter ${right} on method | count`))[0]!.count).toBe(33);
    const j = (await tabular(`['web'] | summarize n = count() by method | join ${right} on method`)).tables[0]!;
    expect(j.fields.map((f) => f.name)).toEqual(['method', 'n', 'method1', 'label']);
    const l = await rows(
      "['web'] | summarize n = count() by method | lookup (datatable(method:string, label:string)['GET', 'read']) on method | sort by method asc",
    );
    expect(l).toEqual([
      { method: 'GET', n: 13, label: 'read' },
      { method: 'POST', n: 7, label: null },
    ]);
    expect((await status("['web'] | join kind=fullouter (['web']) on uri")).message).toMatch(
      /join kind=fullouter is not supported/,
    );
  });

  it('mv-expand: arrays, bags, item index, typed elements, limit; empty and null rows are dropped', async () => {
    expect(
      await rows('print a = dynamic([1, 2, 3]) | mv-expand with_itemindex=i a to typeof(long) | project i, a'),
    ).toEqual([
      { i: 0, a: 1 },
      { i: 1, a: 2 },
      { i: 2, a: 3 },
    ]);
    expect(await rows("print b = dynamic({'x': 1, 'y': 'z'}) | mv-expand b")).toEqual([
      { b: { x: 1 } },
      { b: { y: 'z' } },
    ]);
    expect(await rows("print b = dynamic({'x': 1}) | mv-expand kind=array b")).toEqual([{ b: ['x', 1] }]);
    expect(await rows('print a = dynamic([1, 2, 3]) | mv-expand a limit 2')).toEqual([{ a: 1 }, { a: 2 }]);
    expect(await rows("datatable(a:dynamic)[dynamic([]), dynamic(null), dynamic(['k'])] | mv-expand a")).toEqual([
      { a: 'k' },
    ]);
  });

  it('parse captures by pattern; a row that does not match gets nulls; parse-where drops it', async () => {
    expect(
      await rows(
        "print s = 'GET /x took 42 ms' | parse s with method ' ' path ' took ' ms:long ' ms' | project method, path, ms",
      ),
    ).toEqual([{ method: 'GET', path: '/x', ms: 42 }]);
    expect(
      await rows(
        "print s = 'GET /x took many ms' | parse s with method ' ' path ' took ' ms:long ' ms' | project method, ms",
      ),
    ).toEqual([{ method: null, ms: null }]);
    expect(await rows("print s = 'a=1;b=2' | parse s with * 'b=' b:long | project b")).toEqual([{ b: 2 }]);
    expect(
      await rows("print s = 'v12.3' | parse kind=regex s with 'v' major:long @'\\.' minor:long | project major, minor"),
    ).toEqual([{ major: 12, minor: 3 }]);
    expect((await rows("['web'] | parse-where uri with '/api/v1/' rest | count"))[0]!.count).toBe(10);
  });

  it('arg_max, arg_min, topk and rate', async () => {
    expect(await rows("['web'] | summarize arg_max(dur, uri) by method | sort by method asc")).toEqual([
      { method: 'GET', dur: 28.5, uri: '/api/v1/Item-19' },
      { method: 'POST', dur: 27, uri: '/api/v0/Item-18' },
    ]);
    const t = (await tabular("['web'] | summarize arg_min(_time, *) by method | sort by method asc")).tables[0]!;
    expect(t.fields.map((f) => f.name)).toEqual([
      'method',
      '_time',
      '_sysTime',
      'dur',
      'geo.city',
      'note',
      'status',
      'uri',
    ]);
    expect(t.fields[1]!.agg).toMatchObject({ name: 'argmin' });
    // POST rows have dur 0, 4.5, 9, 13.5, 18, 22.5, 27: the nearest-rank median is 13.5.
    expect(await rows("['web'] | summarize p = percentileif(dur, 50, method == 'POST')")).toEqual([{ p: 13.5 }]);
    expect(await rows("['web'] | where dur <= 9 | summarize h = histogram(dur, 3)")).toEqual([
      {
        h: [
          { lower: 0, upper: 3, count: 2 },
          { lower: 3, upper: 6, count: 2 },
          { lower: 6, upper: 9, count: 3 },
        ],
      },
    ]);
    expect(await rows("['web'] | summarize topk(method, 1)")).toEqual([
      { topk_method: [{ key: 'GET', count: 13, error: 0 }] },
    ]);
    // 10 events of status 200×8 + 500×2 = 2600 per 10-minute bucket → 2600 / 600 s.
    const rates = (await rows("['web'] | summarize r = rate(status) by bin(_time, 10m) | project r")).map(
      (x) => x.r as number,
    );
    expect(rates).toHaveLength(2);
    for (const r of rates) expect(r).toBeCloseTo(2600 / 600, 10);
  });

  it('make-series fills every step of every group, in step order', async () => {
    expect(
      await rows(
        "['web'] | make-series n = count() default = -1, avg(dur) on _time from datetime(2024-01-01T00:00:00Z) to datetime(2024-01-01T00:30:00Z) step 10m",
      ),
    ).toEqual([
      {
        n: [10, 10, -1],
        avg_dur: [6.75, 21.75, 0],
        _time: ['2024-01-01T00:00:00Z', '2024-01-01T00:10:00Z', '2024-01-01T00:20:00Z'],
      },
    ]);
    const byMethod = await rows("['web'] | make-series count() on _time step 5m by method | sort by method asc");
    expect(byMethod.map((r) => [r.method, r.count_])).toEqual([
      ['GET', [3, 3, 4, 3]],
      ['POST', [2, 2, 1, 2]],
    ]);
    expect(await rows("['web'] | make-series sum(status) on dur from 0 to 10 step 5")).toEqual([
      { sum_status: [1100, 900], dur: [0, 5] },
    ]);
    expect(await rows("['web'] | where method == 'nope' | make-series count() on _time step 1m")).toEqual([]);
  });

  it('sample takes a proportion, not a row count', async () => {
    // How many rows it keeps is checked on 10,000 events in query-api.test.ts.
    expect((await status("['web'] | sample 10")).message).toMatch(/proportion of rows between 0 and 1/);
  });
});

describe('string operators and case rules', () => {
  const count = async (pred: string) => (await rows(`['web'] | where ${pred} | count`))[0]!.count;
  it('contains/startswith/endswith ignore case; _cs variants do not', async () => {
    expect(await count("uri contains 'item-1'")).toBe(11);
    expect(await count("uri contains_cs 'item-1'")).toBe(0);
    expect(await count("uri startswith '/API/V1'")).toBe(10);
    expect(await count("uri startswith_cs '/API/V1'")).toBe(0);
    expect(await count("uri endswith 'm-19'")).toBe(1);
    expect(await count("uri !contains 'item-1'")).toBe(9);
    expect(await count("method =~ 'post'")).toBe(7);
    expect(await count("method !~ 'post'")).toBe(13);
    expect(await count("method == 'post'")).toBe(0);
  });
  it('has matches whole terms; hasprefix and hassuffix match term edges', async () => {
    expect(await count("note has 'bar'")).toBe(1);
    expect(await count("note has 'ba'")).toBe(0);
    expect(await count("note has 'FOO'")).toBe(1);
    expect(await count("note has_cs 'FOO'")).toBe(0);
    expect(await count("note hasprefix 'ba'")).toBe(1);
    expect(await count("note hassuffix 'az'")).toBe(1);
    expect(await count("note has_any ('nope', 'baz')")).toBe(1);
    // null never has a term; its negation is true
    expect(await count("note !has 'bar'")).toBe(19);
  });
  it('in, in~, !in, between and matches regex', async () => {
    expect(await count("method in ('GET')")).toBe(13);
    expect(await count("method in~ ('get')")).toBe(13);
    expect(await count("method !in ('GET')")).toBe(7);
    expect(await count('dur between (3.0 .. 6)')).toBe(3);
    expect(await count('dur !between (3.0 .. 6)')).toBe(17);
    expect(await count("uri matches regex 'Item-1[0-9]$'")).toBe(10);
    expect(await count('_time between (datetime(2024-01-01T00:05:00Z) .. 5m)')).toBe(6);
  });
});

describe('scalar functions and literals', () => {
  it('arithmetic follows APL types', async () => {
    expect(await value('10 / 3')).toBe(3);
    expect(await value('10 / 4.0')).toBe(2.5);
    expect(await value('7 % 3')).toBe(1);
    expect(await value('1h / 1m')).toBe(60);
    expect(await value('datetime(2024-01-02) - datetime(2024-01-01)')).toBe('24h0m0s');
    expect(await value('datetime(2024-01-01) + 90m')).toBe('2024-01-01T01:30:00Z');
    expect(await value('2s * 3')).toBe('6s');
  });
  it('conversions use the Go rules', async () => {
    expect(await value('toint("42")')).toBe(42);
    expect(await value('toint("4.2")')).toBe(null);
    expect(await value('toint(4.9)')).toBe(4);
    expect(await value('toreal("1e3")')).toBe(1000);
    expect(await value('tostring(5.0)')).toBe('5');
    expect(await value('tostring(0.1)')).toBe('0.1');
    expect(await value('tostring(bool(null))')).toBe('false');
    expect(await value('tostring(long(null))')).toBe('');
    expect(await value('tostring(80s)')).toBe('1m20s');
    expect(await value('tostring(datetime(2025-03-26T12:12:42.68112905Z))')).toBe('2025-03-26T12:12:42.68112905Z');
    expect(await value('totimespan("1h30m")')).toBe('1h30m0s');
    expect(await value('tobool("T")')).toBe(true);
    expect(await value('todatetime("2024-01-01T10:00:00+02:00")')).toBe('2024-01-01T08:00:00Z');
  });
  it('bin rounds down, including negatives, and anchors 7d bins on Monday', async () => {
    expect(await value('bin(7, 5)')).toBe(5);
    expect(await value('bin(-7, 5)')).toBe(-10);
    expect(await value('bin(4.7, 0.5)')).toBe(4.5);
    expect(await value('bin(datetime(2024-01-01T10:17:00Z), 15m)')).toBe('2024-01-01T10:15:00Z');
    // 2024-01-04 is a Thursday; the Monday week starts 2024-01-01.
    expect(await value('bin(datetime(2024-01-04T10:00:00Z), 7d)')).toBe('2024-01-01T00:00:00Z');
    expect(await value('bin(5, 0)')).toBe(null);
  });
  it('string, null and conditional functions', async () => {
    expect(await value('strcat("a", 1, true)')).toBe('a1true');
    expect(await value('strlen("héllo")')).toBe(5);
    expect(await value('substring("hello", 1, 3)')).toBe('ell');
    expect(await value('substring("hello", 10)')).toBe('');
    expect(await value('toupper("abc")')).toBe('ABC');
    expect(await value('isempty("")')).toBe(true);
    expect(await value('isnull("")')).toBe(false);
    expect(await value('coalesce("", "b")')).toBe('b');
    expect(await value('iff(1 > 2, "y", "n")')).toBe('n');
    expect(await value('case(1 > 2, "a", 2 > 1, "b", "c")')).toBe('b');
    expect(await value('round(2.567, 2)')).toBe(2.57);
    expect(await value('round(-2.5)')).toBe(-3);
    expect(await value('extract("([a-z]+)-([0-9]+)", 2, "abc-123")')).toBe('123');
    expect(await value('replace_regex("(\\\\d+) ms", "$1 milliseconds", "took 5 ms")')).toBe('took 5 milliseconds');
    expect(await value('split("a,b", ",")')).toEqual(['a', 'b']);
    expect(await value('dayofweek(datetime(2024-01-07))')).toBe(0);
    expect(await value('startofweek(datetime(2024-01-10))')).toBe('2024-01-07T00:00:00Z');
  });
  it('URL, regex, byte and IPv4 functions', async () => {
    expect(await value("parse_url('https://user:pw@example.com:8080/p/a?x=1&y=a%20b#frag')")).toEqual({
      Scheme: 'https',
      Host: 'example.com',
      Port: '8080',
      Path: '/p/a',
      Username: 'user',
      Password: 'pw',
      'Query Parameters': { x: '1', y: 'a b' },
      Fragment: 'frag',
    });
    expect(await value("extract_all(@'(\\d+)-([a-z]+)', '1-a 22-bb')")).toEqual([
      ['1', 'a'],
      ['22', 'bb'],
    ]);
    expect(await value("extract_all(@'(\\d+)', 'a1 b22')")).toEqual(['1', '22']);
    expect(await value('format_bytes(564)')).toBe('564 Bytes');
    expect(await value('format_bytes(1000000, 1)')).toBe('976.6 KB');
    expect(await value("parse_ipv4('10.1.2.3')")).toBe(167838211);
    expect(await value("parse_ipv4('10.1.2.3/24')")).toBe(167838208);
    expect(await value("parse_ipv4('300.1.1.1')")).toBe(null);
    expect(await value("ipv4_is_in_range('10.1.2.3', '10.0.0.0/8')")).toBe(true);
    expect(await value("ipv4_is_in_range('11.1.2.3', '10.0.0.0/8')")).toBe(false);
    expect(await value("ipv4_is_private('192.168.1.7')")).toBe(true);
    // The docs' own example, key for key.
    expect(await value("geo_info_from_ip_address('172.217.22.14')")).toEqual({
      state: '',
      longitude: -97.822,
      latitude: 37.751,
      country_iso: 'US',
      country: 'United States',
      city: '',
      time_zone: 'America/Chicago',
    });
    const geo = (await value("geo_info_from_ip_address('81.2.69.142')")) as Record<string, unknown>;
    expect(geo).toMatchObject({ country: 'United Kingdom', country_iso: 'GB', state: 'England', city: 'St Albans' });
    expect(typeof geo.latitude).toBe('number');
    expect(await value("geo_info_from_ip_address('not an ip')")).toBe(null);
    expect(
      (await rows("print g = geo_info_from_ip_address('8.8.8.8') | project c = tostring(g.country_iso)"))[0]!.c,
    ).toBe('US');
  });

  it('null rules: comparisons, and/or', async () => {
    expect(await value('long(null) == 1')).toBe(false);
    expect(await value('long(null) != 1')).toBe(true);
    expect(await value('long(null) == long(null)')).toBe(null);
    expect(await value('false and bool(null)')).toBe(false);
    expect(await value('true or bool(null)')).toBe(true);
  });
  it('now() and ago() are one instant for the whole query', async () => {
    const [r] = await rows('print a = now(), b = ago(1h) + 1h');
    expect(r!.a).toBe(r!.b);
  });
  it('dynamic values and map access', async () => {
    expect(await value("dynamic({'a': {'b': [1, 2]}})['a']['b'][1]")).toBe(2);
    expect(await value('array_length(dynamic([1,2,3]))')).toBe(3);
    expect(await value("bag_pack('k', 1)")).toEqual({ k: 1 });
  });
});

describe('functions of the row', () => {
  it('cursor_current() is the cursor results give the row, ingestion_time() its _sysTime, ensure_field() a typed field or null', async () => {
    const res = await tabular(
      "['web'] | sort by _time desc | take 1 | extend c = cursor_current(), ingested = ingestion_time()",
    );
    const t = res.tables[0]!;
    const col = (name: string) => t.columns[t.fields.findIndex((f) => f.name === name)]![0];
    expect(col('c')).toBe((res.status as { minCursor: string }).minCursor);
    expect(col('ingested')).toBe(col('_sysTime'));
    expect(
      await rows(
        "['web'] | sort by _time asc | take 2 | project s = ensure_field('status', typeof(string)), n = ensure_field('nope', typeof(long))",
      ),
    ).toEqual([
      { s: '500', n: null },
      { s: '200', n: null },
    ]);
    expect((await status("['web'] | summarize count() by method | extend c = cursor_current()")).message).toMatch(
      /cursor_current\(\) needs rows that are events/,
    );
  });
});

describe('errors', () => {
  it('unknown names, functions and type errors are 400 with line and column', async () => {
    expect(await status("['web']\n| where nosuch > 1")).toEqual({
      http: 400,
      code: 400,
      message: 'line 2, column 9: unknown column or variable "nosuch"',
    });
    expect((await status("['web'] | extend x = nosuchfn(1)")).message).toBe(
      'line 1, column 22: unknown function "nosuchfn"',
    );
    expect((await status("['web'] | where method > true")).message).toMatch(
      /^line 1, column 24: the operator ">" is not defined for string and bool/,
    );
    expect((await status("['web'] | summarize make_bag(geo)")).message).toMatch(
      /^line 1, column 21: the aggregation make_bag\(\) is not supported/,
    );
    expect((await status("['web'] | evaluate bag_unpack(geo)")).message).toBe(
      'line 1, column 11: the operator "evaluate" is not supported by this service',
    );
    expect((await status("externaldata (a:string) ['https://example.com/a.csv'] with (format='csv')")).message).toBe(
      'line 1, column 1: the operator "externaldata" is not supported by this service: Ferry does not fetch URLs while querying',
    );
    expect((await status("['web'] | where count() > 1")).message).toMatch(/only allowed in summarize/);
  });
  it('a let sees only the names defined before it: no self or circular references', async () => {
    expect(await status('let a = a | take 1; a')).toMatchObject({
      http: 404,
      message: 'line 1, column 9: dataset "a" not found',
    });
    expect((await status('let b = c | take 1; let c = b | take 1; c')).http).toBe(404);
    expect(await rows("let n = 2; let T = ['web'] | where status == 500; let U = T | take n; U | count")).toEqual([
      { count: 2 },
    ]);
  });

  it('an unknown dataset is 404', async () => {
    expect(await status("['nope'] | count")).toMatchObject({
      http: 404,
      message: 'line 1, column 1: dataset "nope" not found',
    });
  });
  it('bad request bodies are 400', async () => {
    const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: '' });
    expect(r.status).toBe(400);
    const r2 = await svc.call('POST', '/v1/datasets/_apl?format=csv', { apl: "['web']" });
    expect(r2.status).toBe(400);
    const r3 = await svc.call('POST', '/v1/datasets/_apl', { apl: "['web']", startTime: 'yesterday' });
    expect(((await r3.json()) as { message: string }).message).toMatch(/startTime "yesterday" is not a time/);
  });
  it('a regex DuckDB cannot compile is a 400, not a 500', async () => {
    expect((await status("['web'] | where uri matches regex '('")).http).toBe(400);
  });
});

describe('hostile queries', () => {
  it('random queries over real columns answer 200 or a 4xx with a message, never a 500', async () => {
    let seed = 99;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
    const cols = ['status', 'dur', 'method', 'uri', '_time', "['geo.city']", 'note', 'nosuch'];
    const values = [
      "'GET'",
      '500',
      '1.5',
      'true',
      '5m',
      'datetime(2024-01-01)',
      "dynamic([1,'a'])",
      'long(null)',
      "''",
    ];
    const ops = [
      '==',
      '!=',
      '<',
      '>=',
      '+',
      '-',
      '*',
      '/',
      '%',
      'contains',
      'has',
      '!in',
      'in~',
      'startswith',
      'matches regex',
      '=~',
      'and',
      'or',
    ];
    const fns = [
      'tostring',
      'toint',
      'strlen',
      'bin',
      'iff',
      'isnull',
      'round',
      'substring',
      'todatetime',
      'ago',
      'split',
      'parse_json',
      'extract',
      'coalesce',
    ];
    const expr = (depth: number): string => {
      const k = r();
      if (depth > 2 || k < 0.3) return r() < 0.5 ? pick(cols) : pick(values);
      if (k < 0.6)
        return `${expr(depth + 1)} ${pick(ops)} ${['in~', '!in'].includes(ops[0]!) ? '(1)' : expr(depth + 1)}`;
      return `${pick(fns)}(${Array.from({ length: Math.floor(r() * 3) + 1 }, () => expr(depth + 1)).join(', ')})`;
    };
    const operators = [
      () => `where ${expr(0)}`,
      () => `extend x = ${expr(0)}`,
      () => `project ${pick(cols)}, y = ${expr(0)}`,
      () => `summarize c = count(), a = avg(${pick(cols)}) by ${pick(cols)}`,
      () => `sort by ${expr(0)}`,
      () => `take ${Math.floor(r() * 5)}`,
      () => `top 3 by ${pick(cols)}`,
      () => 'count',
      () => `distinct ${pick(cols)}`,
      () => `mv-expand ${pick(cols)}`,
      () => `parse ${pick(cols)} with * '/' a`,
      () => `summarize arg_max(${pick(cols)}, *)`,
      () => `search '${pick(['x', 'a*', '*b*'])}'`,
      () => `union (['web'] | take 2)`,
      () => `join kind=${pick(['inner', 'leftouter', 'innerunique'])} (['web'] | take 3) on ${pick(cols)}`,
      () => `make-series count() on ${pick(cols)} step ${pick(['5m', '1', '0.5'])} by method`,
      () => `lookup (datatable(method:string, l:long)['GET', 1]) on ${pick(cols)}`,
      () => `summarize histogram(${pick(cols)}, 3), topk(${pick(cols)}, 2), rate(${pick(cols)})`,
      () => 'sample 0.5',
      () => `project-away ${pick(cols)}`,
    ];
    const codes: number[] = [];
    for (let n = 0; n < 250; n++) {
      const q = `['web'] | ${Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(operators)()).join(' | ')}`;
      const res = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: q, ...RANGE });
      const body = (await res.json()) as { message?: string };
      // "combines types" is the safety net for a type gap in the binder: each one found is a bug to fix.
      if (res.status >= 500 || /combines types/.test(body.message ?? ''))
        throw new Error(`${q} → ${res.status} ${JSON.stringify(body)}`);
      if (res.status !== 200) expect(body.message, q).toBeTruthy();
      codes.push(res.status);
    }
    // The generator must exercise both paths, or the test proves nothing.
    expect(codes.filter((c) => c === 200).length).toBeGreaterThan(40);
    expect(codes.filter((c) => c === 400).length).toBeGreaterThan(20);
  });
});

describe('every scalar function on a known value', () => {
  // [expression, expected value as JSON gives it]
  const CASES: [string, unknown][] = [
    ['ceiling(1.2)', 2],
    ['floor(-1.5)', -2],
    ['floor(7, 5)', 5],
    ['round(1.005, 1)', 1],
    ['todynamic(\'{"a":1}\')', { a: 1 }],
    ["parse_json('[1,2]')", [1, 2]],
    ["parse_json('not json')", 'not json'],
    ["todynamic('bad')", null],
    ['tolong("12")', 12],
    ['todouble("2.5")', 2.5],
    ['totimespan(90000000000)', '1m30s'],
    ['todatetime(0)', '1970-01-01T00:00:00Z'],
    ['indexof("hello", "l")', 2],
    ['indexof("hello", "z")', -1],
    ['trim("-", "--a-b--")', 'a-b'],
    ['trim_start("-", "--a-")', 'a-'],
    ['trim_end("-", "-a--")', '-a'],
    ['trim_space("  a b  ")', 'a b'],
    ['countof("a", "banana")', 3],
    ['reverse("abc")', 'cba'],
    ['strcat_delim("-", "a", 1, "b")', 'a-1-b'],
    ['replace_string("a", "b", "banana")', 'bbnbnb'],
    ['url_encode("a b&c")', 'a%20b%26c'],
    ['url_decode("a%20b%26c")', 'a b&c'],
    ['base64_encode_tostring("hello")', 'aGVsbG8='],
    ['base64_decode_tostring("aGVsbG8=")', 'hello'],
    ['gettype("a")', 'string'],
    ['gettype(1)', 'long'],
    ['gettype(dynamic([1]))', 'array'],
    ['gettype(dynamic({}))', 'dictionary'],
    ['hash_md5("a")', '0cc175b9c0f1b6a831c399e269772661'],
    ['hash_sha256("a")', 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb'],
    ['datetime_part("hour", datetime(2024-03-05T07:08:09Z))', 7],
    ['datetime_diff("day", datetime(2024-01-10), datetime(2024-01-01))', 9],
    ['datetime_add("month", 1, datetime(2024-01-31))', '2024-02-29T00:00:00Z'],
    ['datetime_add("minute", 90, datetime(2024-01-01))', '2024-01-01T01:30:00Z'],
    ['hourofday(datetime(2024-01-01T13:00:00Z))', 13],
    ['getmonth(datetime(2024-03-05))', 3],
    ['getyear(datetime(2024-03-05))', 2024],
    ['dayofmonth(datetime(2024-03-05))', 5],
    ['dayofyear(datetime(2024-02-01))', 32],
    ['monthofyear(datetime(2024-12-01))', 12],
    ['week_of_year(datetime(2024-01-01))', 1],
    ['startofday(datetime(2024-03-05T13:14:15Z))', '2024-03-05T00:00:00Z'],
    ['endofday(datetime(2024-03-05T13:14:15Z))', '2024-03-05T23:59:59.999999999Z'],
    ['startofmonth(datetime(2024-03-05))', '2024-03-01T00:00:00Z'],
    ['startofyear(datetime(2024-03-05))', '2024-01-01T00:00:00Z'],
    ['endofmonth(datetime(2024-02-05))', '2024-02-29T23:59:59.999999999Z'],
    ['startofday(datetime(2024-03-05), -1)', '2024-03-04T00:00:00Z'],
    ['unixtime_seconds_todatetime(1700000000)', '2023-11-14T22:13:20Z'],
    ['unixtime_milliseconds_todatetime(1700000000123)', '2023-11-14T22:13:20.123Z'],
    ['unixtime_microseconds_todatetime(1700000000123456)', '2023-11-14T22:13:20.123456Z'],
    ['unixtime_nanoseconds_todatetime(1700000000123456789)', '2023-11-14T22:13:20.123456789Z'],
    ['log(exp(2))', 2],
    ['pow(2, 10)', 1024],
    ['abs(-3)', 3],
    ['abs(-2.5)', 2.5],
    ['log10(1000)', 3],
    ['log2(8)', 3],
    ['sqrt(16)', 4],
    ['sqrt(-1)', null],
    ['isnan(sqrt(-1))', null],
    ['isnan(toreal("nan"))', true],
    ['not(1 > 2)', true],
    ['max_of(1, 5, 3)', 5],
    ['min_of(2.5, 1)', 1],
    ['sign(-4.0)', -1],
    ['array_length(dynamic([1, 2]))', 2],
    ['array_length("x")', null],
    ['len(dynamic([1, 2, 3]))', 3],
    ['len("héllo")', 5],
    ['pack_array(1, "a", true)', [1, 'a', true]],
    ['pack_dictionary("a", 1, "b", "x")', { a: 1, b: 'x' }],
    ['bag_keys(dynamic({"a": 1, "b": 2}))', ['a', 'b']],
    ['array_concat(dynamic([1]), dynamic([2, 3]))', [1, 2, 3]],
    ['array_index_of(dynamic(["a", "b"]), "b")', 1],
    ['array_index_of(dynamic(["a"]), "z")', -1],
    ['array_slice(dynamic([1, 2, 3, 4]), 1, 2)', [2, 3]],
    ['array_sum(dynamic([1, 2.5]))', 3.5],
    ['isnotempty("a")', true],
    ['isnotnull(long(null))', false],
    ['iif(true, 1, 2)', 1],
  ];
  for (const [expr, expected] of CASES) {
    it(expr, async () => {
      expect(await value(expr)).toEqual(expected);
    });
  }

  it('the aggregations not covered above', async () => {
    expect(
      await rows(
        "['web'] | summarize minif(dur, method == 'POST'), maxif(dur, method == 'POST'), avgif(dur, method == 'GET'), dcountif(method, status == 500)",
      ),
    ).toEqual([{ minif_dur: 0, maxif_dur: 27, avgif_dur: 14.653846153846153, dcountif_method: 2 }]);
    const [v] = await rows(
      "['web'] | where dur <= 3 | summarize s = stdev(dur), v = variance(dur), l = make_list(dur), st = make_set(method), li = make_list_if(dur, dur > 0), si = make_set_if(method, dur > 0)",
    );
    expect(v!.s).toBeCloseTo(1.5, 10);
    expect(v!.v).toBeCloseTo(2.25, 10);
    expect((v!.l as number[]).sort()).toEqual([0, 1.5, 3]);
    expect((v!.st as string[]).sort()).toEqual(['GET', 'POST']);
    expect((v!.li as number[]).sort()).toEqual([1.5, 3]);
    expect(v!.si).toEqual(['GET']);
  });
});

describe('type matrix', () => {
  it('every function and operator, given arguments of any type, answers 200 or a clear 400', async () => {
    const { SCALAR_FUNCTIONS } = await import('../../../src/apl/functions/scalar.js');
    const { AGGREGATE_FUNCTIONS } = await import('../../../src/apl/functions/aggregate.js');
    const values = [
      "'a1'",
      '7',
      '2.5',
      'true',
      'datetime(2024-01-01)',
      '90s',
      "dynamic({'k': [1]})",
      'long(null)',
      'uri',
      'status',
      'dur',
      '_time',
    ];
    let seed = 5;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
    const queries: string[] = [];
    for (const [name, fn] of Object.entries(SCALAR_FUNCTIONS)) {
      if (name.includes('#')) continue;
      for (let k = 0; k < 6; k++) {
        const n = fn.minArgs + Math.floor(r() * (Math.min(fn.maxArgs, fn.minArgs + 2) - fn.minArgs + 1));
        queries.push(
          `['web'] | take 2 | extend x = ${name}(${Array.from({ length: n }, () => pick(values)).join(', ')}) | project x`,
        );
      }
    }
    for (const [name, fn] of Object.entries(AGGREGATE_FUNCTIONS)) {
      if (name.includes('#')) continue;
      for (let k = 0; k < 4; k++) {
        const n = fn.minArgs + Math.floor(r() * (Math.min(fn.maxArgs, fn.minArgs + 1) - fn.minArgs + 1));
        queries.push(`['web'] | summarize x = ${name}(${Array.from({ length: n }, () => pick(values)).join(', ')})`);
      }
    }
    for (const op of [
      '+',
      '-',
      '*',
      '/',
      '%',
      '==',
      '!=',
      '<',
      '>=',
      '=~',
      'contains',
      'has',
      'startswith',
      'matches regex',
      'in',
      'between',
    ]) {
      for (let k = 0; k < 8; k++) {
        const [a, b] = [pick(values), pick(values)];
        const rhs = op === 'in' ? `(${b})` : op === 'between' ? `(${b} .. ${pick(values)})` : b;
        queries.push(`['web'] | take 2 | extend x = ${a} ${op} ${rhs} | project x`);
      }
    }
    let ok = 0;
    for (const q of queries) {
      const res = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: q, ...RANGE });
      const body = (await res.json()) as { message?: string };
      if (res.status >= 500 || /combines types/.test(body.message ?? ''))
        throw new Error(`${q} → ${res.status} ${JSON.stringify(body)}`);
      if (res.status === 200) ok++;
      else expect(body.message, q).toMatch(/^line \d+, column \d+: |the query failed while running/);
    }
    expect(ok).toBeGreaterThan(queries.length / 3);
  });
});
