/**
 * Metric points as events, both ways: OTLP decoded into point events (the otlp source), read back into
 * series and points (the local sink), and encoded into OTLP again (the axiom sink), which decodes into the
 * same series and points: a histogram's parts go back together, gaps stay gaps.
 */
import { describe, expect, it } from 'vitest';
import {
  metricLinesOf,
  pointEvent,
  pointEventsOf,
  readPointEvent,
  type MetricPoint,
} from '../../../src/ingest/metric-points.js';
import { otlpMetricLines } from '../../../src/ingest/otlp-metrics.js';
import {
  encodeMetricsExport,
  encodeMetricsExportInParts,
  exportRequest,
} from '../../../src/ingest/otlp-metrics-encode.js';
import type { PointColumns } from '../../../src/ingest/point-columns.js';
import type { SeriesEntry } from '../../../src/ingest/series-mirror.js';
import { metricsBody } from '../../support/otlp-metrics.js';

const T0 = 1_767_225_600;

/** Series (metric, tags, type, temporality, unit) and their points, as a set of texts. */
function contents(series: SeriesEntry[], points: PointColumns): string[] {
  const lines = new Map<number, string>();
  series.forEach((e, i) => {
    const s = JSON.parse(`{${e.rest}`) as { m: string; tags: object; type: string; temp: unknown; unit: unknown };
    lines.set(i, JSON.stringify([s.m, s.tags, s.type, s.temp, s.unit]));
  });
  return Array.from(
    { length: points.count },
    (_, i) => `${lines.get(points.series[i]!)} ${points.seconds[i]} ${points.value(i) ?? ''}`,
  ).sort();
}

describe('metric points', () => {
  it('go from OTLP to events to series and back to OTLP without change', async () => {
    const body = Buffer.from(
      metricsBody([
        {
          metric: 'cpu',
          kind: 'gauge',
          unit: '1',
          tags: { host: 'a', core: 1, ratio: { double: 2 } },
          points: [{ t: T0, v: 0.5 }],
        },
        {
          metric: 'reqs',
          kind: 'sum',
          monotonic: true,
          tags: { route: '/a' },
          points: [
            { t: T0, v: 10 },
            { t: T0 + 10, v: 12 },
          ],
        },
        { metric: 'queue', kind: 'sum', monotonic: false, delta: true, tags: {}, points: [{ t: T0, v: -3 }] },
        {
          metric: 'lat',
          kind: 'histogram',
          unit: 's',
          bounds: [1, 5],
          tags: { service: 'cart' },
          points: [{ t: T0, counts: [2, 3, 1], sum: 14, min: 0.5, max: 9 }],
        },
      ]),
    );
    const decoded = otlpMetricLines(body, 1 << 20);
    expect(decoded.rejected).toBe(0);
    const events = await pointEventsOf(decoded.series, decoded.columns);
    // A histogram's data point is one event, whole: no batch cut parts it.
    expect(events).toHaveLength(1 + 2 + 1 + 1);
    expect(events[0]).toBe(
      '{"_time":"2026-01-01T00:00:00Z","metric":"cpu","type":"Gauge","temporality":null,"unit":"1","value":0.5,"tags":{"core":1,"host":"a","ratio":2.0}}',
    );
    expect(JSON.parse(events[4]!)).toEqual({
      _time: '2026-01-01T00:00:00Z',
      metric: 'lat',
      type: 'Histogram',
      temporality: 'Cumulative',
      unit: 's',
      histogram: {
        count: 6,
        sum: 14,
        min: 0.5,
        max: 9,
        buckets: [
          [1, 2],
          [5, 5],
          ['+Inf', 6],
        ],
      },
      tags: { service: 'cart' },
    });
    // Read back by the local sink: the same series and points the service stores from the body.
    const local = metricLinesOf(events);
    expect(local.refused).toEqual([]);
    expect(contents(local.series, local.columns)).toEqual(contents(decoded.series, decoded.columns));
    // Sent on by the axiom sink: the receiver decodes the same series and points again.
    const points = events.map((e) => readPointEvent(e) as MetricPoint);
    const again = otlpMetricLines(Buffer.from(encodeMetricsExport(points)), 1 << 20);
    expect(again.rejected).toBe(0);
    expect(contents(again.series, again.columns)).toEqual(contents(decoded.series, decoded.columns));
    // The same keys: a series stored through the agent is the one stored by POST /v1/metrics (2.0 a float).
    const keys = (series: SeriesEntry[]) => series.map((e) => e.key).sort();
    expect(keys(local.series)).toEqual(keys(decoded.series));
    expect(keys(again.series)).toEqual(keys(decoded.series));
  });

  it('keeps a histogram point that holds no value, and a summary, whole through events and OTLP', async () => {
    const R = exportRequest();
    const body = R.encode(
      R.fromObject({
        resourceMetrics: [
          {
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: 'h',
                    histogram: {
                      aggregationTemporality: 2,
                      dataPoints: [
                        {
                          timeUnixNano: `${T0}000000000`,
                          flags: 1,
                          count: 0,
                          sum: 0,
                          bucketCounts: [0, 0],
                          explicitBounds: [1],
                        },
                      ],
                    },
                  },
                  {
                    name: 's',
                    summary: {
                      dataPoints: [
                        {
                          timeUnixNano: `${T0}000000000`,
                          count: 4,
                          sum: 10,
                          quantileValues: [
                            { quantile: 0.5, value: 2 },
                            { quantile: 0.99, value: 4 },
                          ],
                        },
                      ],
                    },
                  },
                ],
              },
            ],
          },
        ],
      }),
    ).finish();
    const decoded = otlpMetricLines(Buffer.from(body), 1 << 20);
    const events = await pointEventsOf(decoded.series, decoded.columns);
    expect(events.map((e) => JSON.parse(e) as Record<string, unknown>).map((e) => e.histogram ?? e.summary)).toEqual([
      {
        count: null,
        sum: null,
        buckets: [
          [1, null],
          ['+Inf', null],
        ],
      },
      {
        count: 4,
        sum: 10,
        quantiles: [
          [0.5, 2],
          [0.99, 4],
        ],
      },
    ]);
    const local = metricLinesOf(events);
    expect(contents(local.series, local.columns)).toEqual(contents(decoded.series, decoded.columns));
    const again = otlpMetricLines(
      Buffer.from(encodeMetricsExport(events.map((e) => readPointEvent(e) as MetricPoint))),
      1 << 20,
    );
    expect(contents(again.series, again.columns)).toEqual(contents(decoded.series, decoded.columns));
  });

  it('refuses lines that are not points, each with its reason', () => {
    const { series, refused } = metricLinesOf([
      '{"msg":"an event"}',
      'not json',
      '{"_time":"2026-01-01T00:00:00Z","metric":"m","value":"x"}',
      '{"_time":"2026-01-01T00:00:00Z","metric":"m","tags":{"a":[1]},"value":1}',
      '{"_time":"2026-01-01T00:00:00Z","metric":"m","type":"Weird","value":1}',
      '{"_time":"2026-01-01T00:00:00Z","metric":"m","value":null}',
      '{"_time":1e19,"metric":"m","value":1}',
      '{"_time":-1e11,"metric":"m","value":1}',
      '{"_time":-2208988800,"metric":"m","value":1}',
    ]);
    expect(refused).toEqual([
      '"metric" must be a name of 1 to 256 bytes',
      'not a JSON object',
      'metric "m": "value" must be a number or null',
      'metric "m": tag "a" must be a string (up to 1024 bytes), a number or a bool',
      'metric "m": "type" must be one of Gauge, CounterMonotonic, CounterNonMonotonic, Histogram, Summary',
      'metric "m": "_time" must be an RFC 3339 time between 1677 and 2262',
      'metric "m": "_time" must be an RFC 3339 time between 1677 and 2262',
    ]);
    // 1900 is within the range: the null point and it share their series.
    expect(series).toHaveLength(1);
  });

  it('encode a large batch in parts, laid end to end into one export that reads as the whole', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 5_001; i++)
      lines.push(
        pointEvent({
          time: T0 + i,
          metric: `m${i % 7}`,
          // A metric is of one type (a series keeps the type it was first sent with).
          type: (i % 7) % 2 ? 'Gauge' : 'CounterMonotonic',
          temporality: (i % 7) % 2 ? null : 'Cumulative',
          unit: 'By',
          tags: { host: `h${i % 13}`, ratio: i % 3 },
          value: i % 11 ? i / 4 : null,
          // Now and then a histogram, whose parts are put back together across turns of the event loop.
          ...(i % 97 === 0
            ? {
                metric: 'lat',
                type: 'Histogram',
                temporality: 'Cumulative',
                histogram: {
                  count: 4,
                  sum: 2.5,
                  buckets: [[0.5, 1] as [number, number], [Infinity, 4] as [number, number]],
                },
              }
            : {}),
        }),
      );
    lines.splice(2_500, 0, 'not json');
    const { body, refused } = await encodeMetricsExportInParts(lines);
    expect(refused).toEqual(['not a JSON object']);
    const parts = otlpMetricLines(body!, 1 << 26);
    const whole = otlpMetricLines(
      Buffer.from(
        encodeMetricsExport(lines.filter((l) => l !== 'not json').map((l) => readPointEvent(l) as MetricPoint)),
      ),
      1 << 26,
    );
    expect(contents(parts.series, parts.columns)).toEqual(contents(whole.series, whole.columns));
    // Made into events again (a part at a time), they are the lines sent.
    const events = await pointEventsOf(parts.series, parts.columns);
    expect(events.sort()).toEqual(lines.filter((l) => l !== 'not json').sort());
  });
});
