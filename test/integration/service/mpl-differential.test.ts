/**
 * MPL against hand-computed answers: generated series (gauges with gaps and offsets, cumulative counters
 * with a reset, cumulative and delta histograms, typed tags) go in through POST /v1/metrics as OTLP
 * protobuf; each query of the corpus (the reference's example shapes: filters, map, align, group, bucket,
 * compute, as, extend, parameters, ifdef, time ranges, offset) is asked through POST /v1/query/_mpl and its
 * series compared, exactly, with what this file computes from the same points by the rules the README
 * states. Values are integers or exact fractions, so both sides round alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../support/helpers.js';
import { metricsBody, type GenSeries } from '../../support/otlp-metrics.js';

const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z
const HOUR = 3600;
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
const STEPS = 360; // a point every 10 s for an hour

type Tags = Record<string, string | number | boolean>;
/** A series as this file knows it: its tags and its points by time. */
interface Known {
  metric: string;
  tags: Tags;
  points: Map<number, number>;
}
interface Out {
  metric: string;
  tags: Tags;
  start: number;
  resolution: number;
  data: (number | null)[];
}

const known: Known[] = [];
const gen: GenSeries[] = [];

// cpu: a gauge over host × core; host b misses some points, host c reports 5 s after the others.
const HOSTS = ['a', 'b', 'c'];
for (const [h, host] of HOSTS.entries())
  for (const core of [0, 1]) {
    const tags = { host, core, state: core === 0 ? 'user' : 'idle' };
    const points: { t: number; v: number }[] = [];
    for (let i = 0; i < STEPS; i++) {
      if (host === 'b' && i % 17 === 5) continue;
      points.push({ t: T0 + 10 * i + (host === 'c' ? 5 : 0), v: (i * 7 + h * 13 + core * 3) % 50 });
    }
    gen.push({ metric: 'cpu', unit: '1', kind: 'gauge', tags, points });
    known.push({ metric: 'cpu', tags, points: new Map(points.map((p) => [p.t, p.v])) });
  }

// requests: cumulative monotonic counters; cart's /a restarts from zero at step 200.
for (const [s, service] of ['cart', 'shop'].entries())
  for (const route of ['/a', '/b']) {
    const tags = { service, route, status: route === '/a' ? 200 : 500 };
    const points: { t: number; v: number }[] = [];
    let total = 0;
    for (let i = 0; i < STEPS; i++) {
      if (service === 'cart' && route === '/a' && i === 200) total = 0;
      total += ((i % 5) + s + 1) * 10;
      points.push({ t: T0 + 10 * i, v: total });
    }
    gen.push({ metric: 'requests', unit: '{request}', kind: 'sum', monotonic: true, tags, points });
    known.push({ metric: 'requests', tags, points: new Map(points.map((p) => [p.t, p.v])) });
  }

// lat: cumulative histograms (bounds 1, 5, 10) per service; jobs: delta histograms (bounds 1, 5).
const LAT_BOUNDS = [1, 5, 10];
const latCounts = (i: number, s: number) => [(i % 3) + 1, i % 4, (i % 2) * 2, s];
const JOB_BOUNDS = [1, 5];
const jobCounts = (i: number, s: number) => [i % 3, 1, (i + s) % 2];
for (const [s, service] of ['cart', 'shop'].entries()) {
  const running = [0, 0, 0, 0];
  let sum = 0;
  const lat: { t: number; counts: number[]; sum: number }[] = [];
  const jobs: { t: number; counts: number[]; sum: number; min: number; max: number }[] = [];
  for (let i = 0; i < STEPS; i++) {
    latCounts(i, s).forEach((c, k) => (running[k]! += c));
    sum += i % 7;
    lat.push({ t: T0 + 10 * i, counts: [...running], sum });
    jobs.push({ t: T0 + 10 * i, counts: jobCounts(i, s), sum: (i % 5) + 1, min: i % 2, max: 6 + (i % 4) });
  }
  gen.push({ metric: 'lat', unit: 's', kind: 'histogram', bounds: LAT_BOUNDS, tags: { service }, points: lat });
  gen.push({ metric: 'jobs', kind: 'histogram', delta: true, bounds: JOB_BOUNDS, tags: { service }, points: jobs });
}

// queue: a gauge over queue × region, for compute; temp: float tags.
for (const [q, queue] of ['q1', 'q2'].entries())
  for (const [r, region] of ['eu', 'us'].entries()) {
    const tags = { queue, region };
    const points = Array.from({ length: STEPS }, (_, i) => ({ t: T0 + 10 * i, v: ((i + q * 3 + r * 5) % 9) + 1 }));
    gen.push({ metric: 'queue', kind: 'gauge', tags, points });
    known.push({ metric: 'queue', tags, points: new Map(points.map((p) => [p.t, p.v])) });
  }
for (const zone of [1.5, 2]) {
  const points = Array.from({ length: STEPS }, (_, i) => ({ t: T0 + 10 * i, v: i }));
  gen.push({ metric: 'temp', kind: 'gauge', tags: { zone: { double: zone } }, points });
}

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
  expect((await svc.call('POST', '/v2/datasets', { name: 'm', kind: 'otel:metrics:v1' })).status).toBe(200);
  const ingest = await svc.apiToken({ m: { ingest: ['create'] } });
  for (const metric of ['cpu', 'requests', 'lat', 'jobs', 'queue', 'temp']) {
    const r = await svc.call('POST', '/v1/metrics', metricsBody(gen.filter((g) => g.metric === metric)), ingest, {
      'content-type': 'application/x-protobuf',
      'x-axiom-metrics-dataset': 'm',
    });
    expect(r.status, `ingest of ${metric}`).toBe(200);
  }
});
afterAll(async () => svc?.stop());

async function mpl(text: string, o: { start?: number; end?: number; params?: Record<string, string> } = {}) {
  const body: Record<string, unknown> = { mpl: text, params: o.params };
  if (o.start !== null) {
    body.startTime = iso(o.start ?? T0);
    body.endTime = iso(o.end ?? T0 + HOUR);
  }
  const r = await svc.call('POST', '/v1/query/_mpl', body);
  const json = (await r.json()) as { metadata: { group_keys: string[] }; series: (Out & { summary: unknown })[] };
  expect(r.status, JSON.stringify(json)).toBe(200);
  return json;
}

// ---- the rules, computed by hand over `known` ----

const floorTo = (t: number, w: number) => t - (((t % w) + w) % w);
const by = (metric: string, test: (t: Tags) => boolean = () => true) =>
  known.filter((k) => k.metric === metric && test(k.tags));
const sorted = (m: Map<number, number>) => [...m.entries()].sort((a, b) => a[0] - b[0]);

type Fn = 'avg' | 'sum' | 'min' | 'max' | 'count' | 'last';
function reduce(values: number[], fn: Fn): number {
  switch (fn) {
    case 'avg':
      return values.reduce((a, b) => a + b, 0) / values.length;
    case 'sum':
      return values.reduce((a, b) => a + b, 0);
    case 'min':
      return Math.min(...values);
    case 'max':
      return Math.max(...values);
    case 'count':
      return values.length;
    case 'last':
      return values[values.length - 1]!;
  }
}

/** Points of a series in windows of w seconds (labelled by their start), reduced by fn. */
function align(points: Map<number, number>, w: number, fn: Fn): Map<number, number> {
  const windows = new Map<number, number[]>();
  for (const [t, v] of sorted(points)) {
    const k = floorTo(t, w);
    windows.set(k, [...(windows.get(k) ?? []), v]);
  }
  return new Map([...windows].map(([k, vs]) => [k, reduce(vs, fn)]));
}

/** Per-point increases (a drop is a reset: the increase is the new value), at the later point's time. */
function increases(points: Map<number, number>): Map<number, number> {
  const out = new Map<number, number>();
  let prev: number | undefined;
  for (const [t, v] of sorted(points)) {
    if (prev !== undefined) out.set(t, v >= prev ? v - prev : v);
    prev = v;
  }
  return out;
}

function promRate(points: Map<number, number>, w: number): Map<number, number> {
  const sums = align(increases(points), w, 'sum');
  return new Map([...sums].map(([k, v]) => [k, v / w]));
}

/** Series as the API gives them: on the grid of w over the hour, gaps null. */
function onGrid(metric: string, tags: Tags, points: Map<number, number>, w: number, start = T0, end = T0 + HOUR): Out {
  const first = floorTo(start, w);
  const n = (floorTo(end - 1, w) - first) / w + 1;
  const data = Array.from({ length: n }, (_, i) => points.get(first + i * w) ?? null);
  return { metric, tags, start: first, resolution: w, data };
}

/** Groups of series by tags, each group's points reduced across series per time. */
function group(list: { tags: Tags; points: Map<number, number> }[], keys: string[], fn: Fn) {
  const groups = new Map<string, { tags: Tags; values: Map<number, number[]> }>();
  for (const s of list) {
    const tags = Object.fromEntries(keys.filter((k) => k in s.tags).map((k) => [k, s.tags[k]!]));
    const key = JSON.stringify(tags);
    const g = groups.get(key) ?? { tags, values: new Map<number, number[]>() };
    groups.set(key, g);
    for (const [t, v] of s.points) g.values.set(t, [...(g.values.get(t) ?? []), v]);
  }
  return [...groups.values()].map((g) => ({
    tags: g.tags,
    points: new Map([...g.values].map(([t, vs]) => [t, reduce(vs, fn)])),
  }));
}

const order = (list: Out[]) =>
  [...list].sort((a, b) => {
    const x = `${a.metric}\u0000${JSON.stringify(Object.entries(a.tags).sort())}`;
    const y = `${b.metric}\u0000${JSON.stringify(Object.entries(b.tags).sort())}`;
    return x < y ? -1 : x > y ? 1 : 0;
  });
const strip = (list: (Out & { summary?: unknown })[]) =>
  order(list.map(({ metric, tags, start, resolution, data }) => ({ metric, tags, start, resolution, data })));

/** Prometheus's histogram_quantile over cumulative counts by bound (the last bound +Inf). */
function quantile(bounds: number[], cumulative: number[], q: number): number | null {
  const total = cumulative[cumulative.length - 1]!;
  if (!(total > 0)) return null;
  const rank = q * total;
  for (let i = 0; i < cumulative.length; i++) {
    const c = cumulative[i]!;
    if (c < rank) continue;
    const le = i < bounds.length ? bounds[i]! : Infinity;
    const ple = i > 0 ? bounds[i - 1]! : null;
    const pc = i > 0 ? cumulative[i - 1]! : 0;
    if (le === Infinity) return ple;
    if (c === pc) return ple ?? le;
    if (ple === null) return le <= 0 ? le : (le * (rank - pc)) / (c - pc);
    return ple + ((le - ple) * (rank - pc)) / (c - pc);
  }
  return null;
}

const cumulativeOf = (counts: number[]) => counts.map((_, i) => counts.slice(0, i + 1).reduce((a, b) => a + b, 0));

describe('MPL, differential', () => {
  it('aligns every series with each function', async () => {
    for (const [w, fn] of [
      [60, 'avg'],
      [300, 'sum'],
      [300, 'min'],
      [600, 'max'],
      [60, 'count'],
      [30, 'last'],
    ] as const) {
      const got = await mpl(`m:cpu | align to ${w}s using ${fn}`);
      const want = by('cpu').map((k) => onGrid('cpu', k.tags, align(k.points, w, fn), w));
      expect(strip(got.series), `${w}s ${fn}`).toEqual(order(want));
    }
  });

  it('filters on typed tags: strings, ints, regexes, is, in, not, and missing tags', async () => {
    const cases: [string, (t: Tags) => boolean][] = [
      ['host == "a" and core == 0', (t) => t.host === 'a' && t.core === 0],
      ['host != "b"', (t) => t.host !== 'b'],
      ['state == #/^us/', (t) => String(t.state).startsWith('us')],
      ['state != #/^us/ or host == "c"', (t) => !String(t.state).startsWith('us') || t.host === 'c'],
      ['core >= 1', (t) => (t.core as number) >= 1],
      ['core < 1.5 and not host == "a"', (t) => (t.core as number) < 1.5 && t.host !== 'a'],
      ['core is int', () => true],
      ['host is int', () => false],
      ['core == "0"', () => false],
      ['host >= 1 or state < 2.5', () => false],
      ['host in ["a", "c"]', (t) => t.host === 'a' || t.host === 'c'],
      ['(host == "a" or host == "b") and (core == 1)', (t) => (t.host === 'a' || t.host === 'b') && t.core === 1],
      ['nosuch != "x"', () => true],
      ['nosuch == "x"', () => false],
    ];
    for (const [where, test] of cases) {
      const got = await mpl(`m:cpu | where ${where} | align to 10m using min`);
      const want = by('cpu', test).map((k) => onGrid('cpu', k.tags, align(k.points, 600, 'min'), 600));
      expect(strip(got.series), where).toEqual(order(want));
    }
  });

  it('compares float tags as numbers and tells them from ints', async () => {
    const got = await mpl('m:temp | where zone is float and zone >= 2 | align using max');
    expect(strip(got.series)).toEqual([
      { metric: 'temp', tags: { zone: 2 }, start: T0, resolution: HOUR, data: [STEPS - 1] },
    ]);
    expect((await mpl('m:temp | where zone is int | align using max')).series).toEqual([]);
  });

  it('maps points: arithmetic, clamps, filter:: and is::', async () => {
    const cases: [string, (v: number) => number | undefined, Fn, number][] = [
      ['map * 100', (v) => v * 100, 'avg', 300],
      ['map - 10 | map abs', (v) => Math.abs(v - 10), 'sum', 300],
      ['map min(20)', (v) => Math.min(v, 20), 'max', 600],
      ['map max(30)', (v) => Math.max(v, 30), 'min', 600],
      ['map filter::gt(40)', (v) => (v > 40 ? v : undefined), 'count', 300],
      ['map filter::neq(0)', (v) => (v !== 0 ? v : undefined), 'count', 600],
      ['map is::gte(20)', (v) => (v >= 20 ? 1 : 0), 'avg', 600],
      ['map is::lt(10)', (v) => (v < 10 ? 1 : 0), 'sum', 600],
    ];
    for (const [m, f, fn, w] of cases) {
      const got = await mpl(`m:cpu | ${m} | align to ${w}s using ${fn}`);
      const want = by('cpu').map((k) => {
        const mapped = new Map<number, number>();
        for (const [t, v] of k.points) {
          const x = f(v);
          if (x !== undefined) mapped.set(t, x);
        }
        return onGrid('cpu', k.tags, align(mapped, w, fn), w);
      });
      expect(strip(got.series), m).toEqual(order(want));
    }
  });

  it('fills gaps on the grid: fill::prev, fill::const, interpolate::linear', async () => {
    const b = by('cpu', (t) => t.host === 'b');
    const grid = (k: Known, fill: (data: (number | null)[]) => (number | null)[]) => {
      const g = onGrid('cpu', k.tags, align(k.points, 10, 'last'), 10);
      return { ...g, data: fill(g.data) };
    };
    const prev = (d: (number | null)[]) => {
      let last: number | null = null;
      return d.map((v) => (v === null ? last : (last = v)));
    };
    const linear = (d: (number | null)[]) =>
      d.map((v, i) => {
        if (v !== null) return v;
        let a = i - 1;
        while (a >= 0 && d[a] === null) a--;
        let z = i + 1;
        while (z < d.length && d[z] === null) z++;
        if (a < 0 || z >= d.length) return null;
        return d[a]! + ((d[z]! - d[a]!) * (i - a)) / (z - a);
      });
    for (const [m, fill] of [
      ['fill::prev', prev],
      ['fill::const(-1)', (d: (number | null)[]) => d.map((v) => v ?? -1)],
      ['interpolate::linear', linear],
    ] as const) {
      const got = await mpl(`m:cpu | where host == "b" | align to 10s using last | map ${m}`);
      expect(strip(got.series), m).toEqual(order(b.map((k) => grid(k, fill))));
      expect(got.series.every((s) => s.data.length === STEPS)).toBe(true);
    }
    // The gaps are there before the fill.
    const raw = await mpl('m:cpu | where host == "b" and core == 0 | align to 10s using last');
    expect(raw.series[0]!.data.filter((v) => v === null)).toHaveLength(21);
  });

  it('counts rates and increases of counters across a reset', async () => {
    const rate = await mpl('m:requests | align to 5m using prom::rate');
    expect(strip(rate.series)).toEqual(
      order(by('requests').map((k) => onGrid('requests', k.tags, promRate(k.points, 300), 300))),
    );
    const inc = await mpl('m:requests | map increase | align to 10m using sum');
    expect(strip(inc.series)).toEqual(
      order(by('requests').map((k) => onGrid('requests', k.tags, align(increases(k.points), 600, 'sum'), 600))),
    );
    // map rate: per second between points (10 s apart), then the highest per minute summed over series.
    const total = await mpl('m:requests | map rate | align to 1m using max | group using sum');
    const perSeries = by('requests').map((k) => {
      const r = new Map([...increases(k.points)].map(([t, v]) => [t, v / 10]));
      return { tags: k.tags, points: align(r, 60, 'max') };
    });
    const [sum] = group(perSeries, [], 'sum');
    expect(strip(total.series)).toEqual([onGrid('requests', {}, sum!.points, 60)]);
    expect(total.metadata.group_keys).toEqual([]);
  });

  it('groups by tags with each function, and by a tag some series lack', async () => {
    for (const fn of ['sum', 'avg', 'min', 'max', 'count'] as const) {
      const got = await mpl(`m:cpu | align to 1m using avg | group by host using ${fn}`);
      const aligned = by('cpu').map((k) => ({ tags: k.tags, points: align(k.points, 60, 'avg') }));
      const want = group(aligned, ['host'], fn).map((g) => onGrid('cpu', g.tags, g.points, 60));
      expect(strip(got.series), fn).toEqual(order(want));
      expect(got.metadata.group_keys).toEqual(['host']);
    }
    const two = await mpl('m:cpu | align to 5m using max | group by state, nosuch using max');
    const aligned = by('cpu').map((k) => ({ tags: k.tags, points: align(k.points, 300, 'max') }));
    expect(strip(two.series)).toEqual(
      order(group(aligned, ['state'], 'max').map((g) => onGrid('cpu', g.tags, g.points, 300))),
    );
  });

  it('buckets values with histogram(), quantiles interpolated between order statistics', async () => {
    const got = await mpl('m:cpu | bucket by host to 10m using histogram(min, max, avg, 0.5, count, sum)');
    const want: Out[] = [];
    for (const host of HOSTS) {
      const windows = new Map<number, number[]>();
      for (const k of by('cpu', (t) => t.host === host))
        for (const [t, v] of k.points) windows.set(floorTo(t, 600), [...(windows.get(floorTo(t, 600)) ?? []), v]);
      const spec = (label: string, f: (vs: number[]) => number) =>
        want.push(onGrid('cpu', { host, spec: label }, new Map([...windows].map(([t, vs]) => [t, f(vs)])), 600));
      spec('min', (vs) => reduce(vs, 'min'));
      spec('max', (vs) => reduce(vs, 'max'));
      spec('avg', (vs) => reduce(vs, 'avg'));
      spec('p50', (vs) => {
        const s = [...vs].sort((a, b) => a - b);
        const pos = 0.5 * (s.length - 1);
        const lo = Math.floor(pos);
        const hi = Math.ceil(pos);
        return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
      });
      spec('count', (vs) => vs.length);
      spec('sum', (vs) => reduce(vs, 'sum'));
    }
    expect(strip(got.series)).toEqual(order(want));
    expect(got.metadata.group_keys).toEqual(['host']);
  });

  it('interpolates quantiles, count, sum and avg from cumulative histograms, as rates and increases', async () => {
    for (const mode of ['rate', 'increase'] as const) {
      const got = await mpl(
        `m:lat | bucket by service to 5m using interpolate_cumulative_histogram(${mode}, 0.5, 0.9, count, sum, avg)`,
      );
      const want: Out[] = [];
      for (const [s, service] of ['cart', 'shop'].entries()) {
        // What each window adds to each bucket, the count and the sum: the later point's increase.
        const running = [0, 0, 0, 0];
        let sum = 0;
        const perWindow = new Map<number, { buckets: number[]; count: number; sum: number }>();
        for (let i = 0; i < STEPS; i++) {
          const counts = latCounts(i, s);
          const before = { running: [...running], sum };
          counts.forEach((c, k) => (running[k]! += c));
          sum += i % 7;
          if (i === 0) continue;
          const w = floorTo(T0 + 10 * i, 300);
          const acc = perWindow.get(w) ?? { buckets: [0, 0, 0, 0], count: 0, sum: 0 };
          const cumNow = cumulativeOf(running);
          const cumBefore = cumulativeOf(before.running);
          cumNow.forEach((c, k) => (acc.buckets[k]! += c - cumBefore[k]!));
          acc.count += cumNow[3]! - cumBefore[3]!;
          acc.sum += sum - before.sum;
          perWindow.set(w, acc);
        }
        const per = mode === 'rate' ? 300 : 1;
        const spec = (label: string, f: (a: { buckets: number[]; count: number; sum: number }) => number | null) => {
          const points = new Map<number, number>();
          for (const [w, a] of perWindow) {
            const v = f(a);
            if (v !== null) points.set(w, v);
          }
          want.push(onGrid('lat', { service, spec: label }, points, 300));
        };
        spec('p50', (a) => quantile(LAT_BOUNDS, a.buckets, 0.5));
        spec('p90', (a) => quantile(LAT_BOUNDS, a.buckets, 0.9));
        spec('count', (a) => a.count / per);
        spec('sum', (a) => a.sum / per);
        spec('avg', (a) => (a.count === 0 ? null : a.sum / a.count));
      }
      expect(strip(got.series), mode).toEqual(order(want));
    }
  });

  it('interpolates from delta histograms over all series, with min and max', async () => {
    const got = await mpl('m:jobs | bucket to 10m using interpolate_delta_histogram(0.5, max, min, count)');
    const windows = new Map<number, { buckets: number[]; min: number; max: number; count: number }>();
    for (const s of [0, 1])
      for (let i = 0; i < STEPS; i++) {
        const w = floorTo(T0 + 10 * i, 600);
        const a = windows.get(w) ?? { buckets: [0, 0, 0], min: Infinity, max: -Infinity, count: 0 };
        const c = jobCounts(i, s);
        cumulativeOf(c).forEach((x, k) => (a.buckets[k]! += x));
        a.count += c.reduce((x, y) => x + y, 0);
        a.min = Math.min(a.min, i % 2);
        a.max = Math.max(a.max, 6 + (i % 4));
        windows.set(w, a);
      }
    const spec = (label: string, f: (a: { buckets: number[]; min: number; max: number; count: number }) => number) =>
      onGrid('jobs', { spec: label }, new Map([...windows].map(([w, a]) => [w, f(a)])), 600);
    expect(strip(got.series)).toEqual(
      order([
        spec('p50', (a) => quantile(JOB_BOUNDS, a.buckets, 0.5)!),
        spec('max', (a) => a.max),
        spec('min', (a) => a.min),
        spec('count', (a) => a.count),
      ]),
    );
  });

  it('computes across two queries on matching tags and times; / drops a zero divisor', async () => {
    const got = await mpl(`(
        m:queue | where region == "eu" | align to 1m using avg | group by queue using sum,
        m:queue | align to 1m using avg | group by queue using sum,
      ) | compute share using /
      | map * 100`);
    const aligned = (test: (t: Tags) => boolean) =>
      group(
        by('queue', test).map((k) => ({ tags: k.tags, points: align(k.points, 60, 'avg') })),
        ['queue'],
        'sum',
      );
    const eu = aligned((t) => t.region === 'eu');
    const all = aligned(() => true);
    const want = eu.map((e) => {
      const d = all.find((a) => a.tags.queue === e.tags.queue)!;
      const points = new Map([...e.points].map(([t, v]) => [t, (v / d.points.get(t)!) * 100]));
      return onGrid('share', e.tags, points, 60);
    });
    expect(strip(got.series)).toEqual(order(want));

    // Strict intersection: a branch with series the other lacks gives only the shared ones.
    const sub = await mpl(`(
        m:queue | align to 10m using max,
        m:queue | where queue == "q1" | align to 10m using min
      ) | compute spread using -`);
    const spread = by('queue', (t) => t.queue === 'q1').map((k) => {
      const hi = align(k.points, 600, 'max');
      const lo = align(k.points, 600, 'min');
      return onGrid('spread', k.tags, new Map([...hi].map(([t, v]) => [t, v - lo.get(t)!])), 600);
    });
    expect(strip(sub.series)).toEqual(order(spread));

    // Zero divisors drop their points.
    const zero = await mpl(`(
        m:queue | where queue == "q2" and region == "us" | align to 10s using last,
        m:queue | where queue == "q2" and region == "us" | align to 10s using last | map filter::lt(5) | map is::gt(100)
      ) | compute z using /`);
    expect(zero.series).toEqual([]);
  });

  it('renames with as, adds tags with extend (constants and interpolation)', async () => {
    const got = await mpl(
      'm:cpu | align to 1h using max | group by host using max | as worst | extend env = "prod", tier = 2, inst = "${host}-x"',
    );
    const aligned = by('cpu').map((k) => ({ tags: k.tags, points: align(k.points, HOUR, 'max') }));
    const want = group(aligned, ['host'], 'max').map((g) =>
      onGrid('worst', { ...g.tags, env: 'prod', tier: 2, inst: `${String(g.tags.host)}-x` }, g.points, HOUR),
    );
    expect(strip(got.series)).toEqual(order(want));
    const alias = await mpl('m:cpu as c | where host == "a" | align using count');
    expect(alias.series.map((s) => [s.metric, s.resolution, s.data])).toEqual([
      ['c', HOUR, [STEPS]],
      ['c', HOUR, [STEPS]],
    ]);
  });

  it('reads parameters, ifdef, inline ranges and offsets', async () => {
    const text = 'param $h: string; param $w: Duration; m:cpu | where host == $h | align to $w using sum';
    const got = await mpl(text, { params: { param__h: '"c"', param__w: '15m' } });
    expect(strip(got.series)).toEqual(
      order(by('cpu', (t) => t.host === 'c').map((k) => onGrid('cpu', k.tags, align(k.points, 900, 'sum'), 900))),
    );

    const opt = 'param $h: Option<string>; m:cpu | ifdef($h) { where host == $h } | align using count';
    expect((await mpl(opt, { params: { param__h: '"a"' } })).series).toHaveLength(2);
    expect((await mpl(opt)).series).toHaveLength(6);
    const otherwise =
      'param $h: Option<string>; m:cpu | ifdef($h) { where host == $h } else { where host == "b" } | align using count';
    expect((await mpl(otherwise)).series.map((s) => s.tags.host)).toEqual(['b', 'b']);

    // A range in the query: 30 minutes from an RFC 3339 start; and one as a Unix time and a span before it.
    const inline = await svc.call('POST', '/v1/query/_mpl', {
      mpl: `m:cpu[${iso(T0 + 600)}..+30m] | where host == "a" | align to 10m using sum`,
    });
    const want = by('cpu', (t) => t.host === 'a').map((k) => {
      const inRange = new Map([...k.points].filter(([t]) => t >= T0 + 600 && t < T0 + 2400));
      return onGrid('cpu', k.tags, align(inRange, 600, 'sum'), 600, T0 + 600, T0 + 2400);
    });
    expect(strip(((await inline.json()) as { series: Out[] }).series)).toEqual(order(want));
    const before = await svc.call('POST', '/v1/query/_mpl', {
      mpl: `m:cpu[-20m..${T0 + 1800}] | where host == "a" | align to 10m using sum`,
    });
    expect(((await before.json()) as { series: Out[] }).series[0]!.data).toHaveLength(2);

    // offset -10m: the points of ten minutes before, shown at the range's times.
    const shifted = await mpl('m:cpu | where host == "a" and core == 0 | offset -10m | align to 5m using sum', {
      start: T0 + 1200,
      end: T0 + 2400,
    });
    const a0 = by('cpu', (t) => t.host === 'a' && t.core === 0)[0]!;
    const moved = new Map([...a0.points].filter(([t]) => t >= T0 + 600 && t < T0 + 1800).map(([t, v]) => [t + 600, v]));
    expect(strip(shifted.series)).toEqual([
      onGrid('cpu', a0.tags, align(moved, 300, 'sum'), 300, T0 + 1200, T0 + 2400),
    ]);
  });

  it('gives series without align at their own resolution', async () => {
    const one = await mpl('m:cpu | where host == "a" and core == 0');
    const a0 = by('cpu', (t) => t.host === 'a' && t.core === 0)[0]!;
    expect(strip(one.series)).toEqual([onGrid('cpu', a0.tags, a0.points, 10)]);
    expect(one.series[0]!.summary).toBe(a0.points.get(T0 + 10 * (STEPS - 1)));
    // Host c reports 5 s after host a: together, a 5 s grid with every other point a gap.
    const both = await mpl('m:cpu | where core == 1 and (host == "a" or host == "c")');
    expect(both.series.map((s) => [s.start, s.resolution, s.data.length])).toEqual([
      [T0, 5, 2 * STEPS],
      [T0, 5, 2 * STEPS],
    ]);
  });
});
