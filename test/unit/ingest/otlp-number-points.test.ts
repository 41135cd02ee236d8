/**
 * Gauges and sums read straight from their bytes (otlp-number-points.ts, with the series described in
 * earlier bodies kept) give the same series, points and refusals as the same bodies decoded whole by
 * protobufjs: seeded random exports with every attribute type (refused ones too), keys repeated across
 * and within levels, points without a time or a value, as_int and as_double, flags, fields in any order,
 * the same series in several resources, and each body read twice (the second time from what the first
 * left described).
 */
import { createRequire } from 'node:module';
import protobuf from 'protobufjs/minimal.js';
import { describe, expect, it } from 'vitest';
import { exportRequest } from '../../../src/ingest/otlp-metrics-encode.js';
import {
  DescribedSeriesCache,
  described,
  otlpMetricLines,
  type MetricLines,
} from '../../../src/ingest/otlp-metrics.js';
import { testSeed } from '../../support/helpers.js';

const Request = exportRequest();
interface Type {
  encode(m: unknown): { finish(): Uint8Array };
}
const proto = (
  createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js') as {
    opentelemetry: {
      proto: {
        metrics: { v1: { Metric: Type; NumberDataPoint: Type } };
        resource: { v1: { Resource: Type } };
        common: { v1: { InstrumentationScope: Type } };
      };
    };
  }
).opentelemetry.proto;
const Metric = proto.metrics.v1.Metric;
const Point = proto.metrics.v1.NumberDataPoint;
const Resource = proto.resource.v1.Resource;
const Scope = proto.common.v1.InstrumentationScope;
const NOW = 1_800_000_000;

/** What a body's lines say, in an order of their own: each point with its series' line (without its number). */
function meaning(m: MetricLines): { points: string[]; rejected: number; firstRejection?: string } {
  const lines = new Map<number, string>();
  m.series.forEach((e, i) => lines.set(i, JSON.stringify({ ...JSON.parse(`{${e.rest}`), key: e.key })));
  const points = Array.from(
    { length: m.columns.count },
    (_, i) => `${lines.get(m.columns.series[i]!)} ${m.columns.seconds[i]} ${m.columns.value(i)}`,
  );
  return { points: points.sort(), rejected: m.rejected, firstRejection: m.firstRejection };
}

function generator(rnd: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const keys = ['host', 'state', 'region', 'cpu', 'dup', 'é'];
  const value = () =>
    pick([
      () => ({ stringValue: pick(['a', 'b', '', 'x'.repeat(1100), 'ünï']) }),
      () => ({ intValue: pick([0, 7, -3, 2 ** 40]) }),
      () => ({ doubleValue: pick([1.5, 2, -0.25, Infinity]) }),
      () => ({ boolValue: rnd() < 0.5 }),
      () => ({ bytesValue: Buffer.from('zz') }),
      () => ({ arrayValue: { values: [{ stringValue: 'q' }] } }),
      () => ({}),
    ])();
  const attributes = (most: number) =>
    Array.from({ length: Math.floor(rnd() * (most + 1)) }, () => ({
      key: pick(keys),
      // Refused types now and then, plain values mostly.
      value: rnd() < 0.85 ? { stringValue: pick(['a', 'b', 'c']) } : value(),
    }));
  const time = () =>
    pick([
      () => undefined,
      () => `${1_767_225_600 + Math.floor(rnd() * 100) * 10}000000000`,
      () => `${1_767_225_600 + Math.floor(rnd() * 100)}${String(Math.floor(rnd() * 1e9)).padStart(9, '0')}`,
      () => '999999999',
      () => '1000000000',
    ])();
  const point = (tagSets: ReturnType<typeof attributes>[]) => {
    const p: Record<string, unknown> = { attributes: pick(tagSets), timeUnixNano: time() };
    const v = rnd();
    if (v < 0.45) p.asDouble = pick([1.25, -3, 0, NaN, 1e300, Math.PI]);
    else if (v < 0.9) p.asInt = pick([0, 42, -7, '9007199254740993', '-9223372036854775808']);
    if (rnd() < 0.1) p.flags = pick([1, 2, 3]);
    if (rnd() < 0.1) p.startTimeUnixNano = '1';
    return p;
  };
  const metric = () => {
    const tagSets = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => attributes(3));
    const points = Array.from({ length: Math.floor(rnd() * 8) }, () => point(tagSets));
    const m: Record<string, unknown> = {
      name: pick(['cpu', 'mem', 'net.io', '', 'x'.repeat(300)]),
      unit: pick(['', 'By', '1']),
      description: pick(['', 'd']),
    };
    const kind = rnd();
    if (kind < 0.45) m.gauge = { dataPoints: points };
    else if (kind < 0.9)
      m.sum = { dataPoints: points, isMonotonic: rnd() < 0.5, aggregationTemporality: pick([0, 1, 2, 7]) };
    else
      m.histogram = {
        aggregationTemporality: 2,
        dataPoints: points.map((p) => ({
          attributes: p.attributes,
          timeUnixNano: p.timeUnixNano,
          count: 3,
          sum: 4.5,
          bucketCounts: [1, 2],
          explicitBounds: [10],
        })),
      };
    return m;
  };
  const resources = Array.from({ length: 2 }, () => attributes(3));
  return () => ({
    resourceMetrics: Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => ({
      resource: { attributes: pick(resources) },
      scopeMetrics: Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => ({
        scope: { name: 's', attributes: rnd() < 0.7 ? [] : attributes(2) },
        metrics: Array.from({ length: 1 + Math.floor(rnd() * 4) }, metric),
      })),
    })),
  });
}

/** The same message with its top-level fields in another order (what protobuf allows a sender). */
function shuffled(bytes: Uint8Array, rnd: () => number): Uint8Array {
  const reader = protobuf.Reader.create(bytes);
  const fields: Uint8Array[] = [];
  while (reader.pos < bytes.length) {
    const start = reader.pos;
    reader.skipType(reader.uint32() & 7);
    fields.push(bytes.subarray(start, reader.pos));
  }
  for (let i = fields.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  return Buffer.concat(fields);
}

/** A body whose data points each have their fields in a random order. */
function withShuffledPoints(request: ReturnType<ReturnType<typeof generator>>, rnd: () => number): Buffer {
  // Re-encoded by hand from the decoded message: each level written with its data points' fields shuffled.
  const decoded = Request.decode(Request.encode(Request.fromObject(request)).finish()) as {
    resourceMetrics: {
      resource?: unknown;
      scopeMetrics: { scope?: unknown; metrics: Record<string, unknown>[] }[];
    }[];
  };
  const w = protobuf.Writer.create();
  for (const rm of decoded.resourceMetrics) {
    const rw = protobuf.Writer.create();
    if (rm.resource) rw.uint32((1 << 3) | 2).bytes(Resource.encode(rm.resource).finish());
    for (const sm of rm.scopeMetrics) {
      const sw = protobuf.Writer.create();
      if (sm.scope) sw.uint32((1 << 3) | 2).bytes(Scope.encode(sm.scope).finish());
      for (const m of sm.metrics) {
        const data = (m.gauge ?? m.sum) as { dataPoints: unknown[] } | undefined;
        if (!data) {
          sw.uint32((2 << 3) | 2).bytes(Metric.encode(m).finish());
          continue;
        }
        // The metric without its points, then the data field rewritten with shuffled points.
        const field = m.gauge ? 5 : 7;
        const bare = Metric.encode({ ...m, gauge: undefined, sum: undefined }).finish();
        const dw = protobuf.Writer.create();
        for (const p of data.dataPoints) dw.uint32((1 << 3) | 2).bytes(shuffled(Point.encode(p).finish(), rnd));
        if (m.sum) {
          const s = m.sum as { aggregationTemporality?: number; isMonotonic?: boolean };
          if (s.aggregationTemporality) dw.uint32(2 << 3).int32(s.aggregationTemporality);
          if (s.isMonotonic) dw.uint32(3 << 3).bool(true);
        }
        const mw = protobuf.Writer.create();
        mw.uint32((field << 3) | 2).bytes(dw.finish());
        sw.uint32((2 << 3) | 2).bytes(shuffled(Buffer.concat([bare, mw.finish()]), rnd));
      }
      rw.uint32((2 << 3) | 2).bytes(sw.finish());
    }
    w.uint32((1 << 3) | 2).bytes(rw.finish());
  }
  return Buffer.from(w.finish());
}

describe('gauges and sums read from their bytes', () => {
  it('give what decoding them whole gives, body after body (seeded)', () => {
    const { rnd, replay } = testSeed(
      'NUMBER_POINTS_SEED',
      'npx vitest run test/unit/ingest/otlp-number-points.test.ts',
    );
    const next = generator(rnd);
    let compared = 0;
    for (let round = 0; round < 300; round++) {
      const request = next();
      const body =
        rnd() < 0.3
          ? withShuffledPoints(request, rnd)
          : Buffer.from(Request.encode(Request.fromObject(request)).finish());
      const outcome = (scan: boolean) => {
        try {
          return meaning(otlpMetricLines(body, 1 << 24, NOW, scan));
        } catch (e) {
          return { error: (e as Error).message };
        }
      };
      const whole = outcome(false);
      expect(outcome(true), `${replay}, round ${round}`).toEqual(whole);
      // Read again: the series described the first time are reused.
      expect(outcome(true), `${replay}, round ${round}, again`).toEqual(whole);
      if ('points' in whole) compared += whole.points.length;
    }
    // The generator must make points to compare, or this test shows nothing.
    expect(compared).toBeGreaterThan(1000);
  });

  it('read exact seconds from nanoseconds at the edges of a second and of int64', () => {
    const body = (t: string) =>
      Buffer.from(
        Request.encode(
          Request.fromObject({
            resourceMetrics: [
              {
                scopeMetrics: [{ metrics: [{ name: 'g', gauge: { dataPoints: [{ timeUnixNano: t, asDouble: 1 }] } }] }],
              },
            ],
          }),
        ).finish(),
      );
    const seconds = (t: string) => otlpMetricLines(body(t), 1 << 20, NOW).columns.seconds[0];
    expect(seconds('1767225599999999999')).toBe(1_767_225_599);
    expect(seconds('1767225600000000000')).toBe(1_767_225_600);
    expect(seconds('9223372036854775807')).toBe(9_223_372_036);
    expect(seconds('0')).toBe(NOW);
    expect(() => otlpMetricLines(body('9223372036854775808'), 1 << 20, NOW)).toThrow(
      /a point time of 9223372036854775808 ns since 1970 is past 2262/,
    );
  });

  it('keep the series they described within a bound of bytes, starting afresh past it', () => {
    const cache = new DescribedSeriesCache(10_000);
    const first = cache.resource('r'.repeat(1000));
    const metric = cache.metric(cache.scope(first, 's'), 'Gauge|null|0:cpu');
    cache.add(metric, 'a', { key: '"cpu"{}', rest: '"m":"cpu"}', gid: -1 });
    expect(cache.resource('r'.repeat(1000))).toBe(first);
    // Levels that hold no series count too: a sender of ever new resources cannot grow it past its bound.
    for (let i = 0; i < 20; i++) cache.resource(`${i}`.padEnd(1000, 'x'));
    const again = cache.resource('r'.repeat(1000));
    expect(again).not.toBe(first);
    expect(again.size).toBe(0);
  });

  it("hold a resource's bytes once however many scopes and metrics it has", () => {
    // A resource of 1 MB (an unknown field) over 10,000 scopes, each with a gauge of one point.
    const w = protobuf.Writer.create();
    const point = Point.encode({ asDouble: 1, timeUnixNano: '1767225600000000000' }).finish();
    const metric = protobuf.Writer.create()
      .uint32((1 << 3) | 2)
      .string('g')
      .uint32((5 << 3) | 2)
      .fork();
    metric
      .uint32((1 << 3) | 2)
      .bytes(point)
      .ldelim();
    const scope = protobuf.Writer.create()
      .uint32((2 << 3) | 2)
      .bytes(metric.finish())
      .finish();
    w.uint32((1 << 3) | 2).fork();
    w.uint32((1 << 3) | 2).bytes(
      Buffer.concat([Buffer.from([(15 << 3) | 2, 0x80, 0x80, 0x40]), Buffer.alloc(1 << 20)]),
    );
    for (let i = 0; i < 10_000; i++) w.uint32((2 << 3) | 2).bytes(scope);
    w.ldelim();
    const before = described.heldBytes;
    const lines = otlpMetricLines(Buffer.from(w.finish()), 1 << 26, NOW);
    expect(lines.points).toBe(10_000);
    expect(lines.series.length).toBe(1);
    // The resource's text is kept once (2 bytes a character, counted), not once a scope.
    expect(described.heldBytes - before).toBeLessThan(3 * (1 << 20));
  });

  it('refuse a known field sent with another wire type, which decoding whole would misread', () => {
    // An export of one gauge whose data point (or metric, or sum) is the bytes given.
    const body = (metric: Uint8Array) => {
      const w = protobuf.Writer.create();
      w.uint32((1 << 3) | 2)
        .fork()
        .uint32((2 << 3) | 2)
        .fork()
        .uint32((2 << 3) | 2)
        .bytes(metric)
        .ldelim()
        .ldelim();
      return Buffer.from(w.finish());
    };
    const gauge = (point: Uint8Array) =>
      protobuf.Writer.create()
        .uint32((1 << 3) | 2)
        .string('g')
        .uint32((5 << 3) | 2)
        .fork()
        .uint32((1 << 3) | 2)
        .bytes(point)
        .ldelim()
        .finish();
    const value = () =>
      protobuf.Writer.create()
        .uint32((4 << 3) | 1)
        .double(1);
    const kv = protobuf.Writer.create()
      .uint32((1 << 3) | 2)
      .string('a')
      .finish();
    const cases: [string, Uint8Array][] = [
      [
        'attributes as a varint',
        gauge(
          value()
            .uint32(7 << 3)
            .uint32(kv.length)
            .finish(),
        ),
      ],
      [
        'time as a varint',
        gauge(
          value()
            .uint32(3 << 3)
            .uint32(0)
            .finish(),
        ),
      ],
      [
        'flags as a fixed64',
        gauge(
          value()
            .uint32((8 << 3) | 1)
            .fixed64(3)
            .finish(),
        ),
      ],
      [
        'name as a varint',
        protobuf.Writer.create()
          .uint32(1 << 3)
          .uint32(5)
          .finish(),
      ],
      [
        'temporality as a fixed32',
        protobuf.Writer.create()
          .uint32((1 << 3) | 2)
          .string('s')
          .uint32((7 << 3) | 2)
          .fork()
          .uint32((2 << 3) | 5)
          .fixed32(2)
          .ldelim()
          .finish(),
      ],
    ];
    for (const [what, metric] of cases)
      expect(() => otlpMetricLines(body(metric), 1 << 20, NOW), what).toThrow(
        /invalid OTLP metrics protobuf body: field \d+ of a (data point|metric|sum) has wire type \d, not \d/,
      );
    // Well formed, the same gauge is taken.
    expect(otlpMetricLines(body(gauge(value().finish())), 1 << 20, NOW).points).toBe(1);
  });
});
