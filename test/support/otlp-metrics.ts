/**
 * OTLP/HTTP protobuf metrics bodies made from a plain description of series and their points, with exact
 * times and values (what a differential test needs and an SDK does not give): gauges, sums and explicit
 * histograms, each point's attributes the series' tags.
 */
import { exportRequest } from '../../src/ingest/otlp-metrics-encode.js';

type TagValue = string | number | boolean | { double: number };

export type GenSeries = {
  metric: string;
  unit?: string;
  tags: Record<string, TagValue>;
} & (
  | { kind: 'gauge'; points: { t: number; v: number }[] }
  | { kind: 'sum'; monotonic: boolean; delta?: boolean; points: { t: number; v: number }[] }
  | {
      kind: 'histogram';
      delta?: boolean;
      bounds: number[];
      points: { t: number; counts: number[]; sum: number; min?: number; max?: number }[];
    }
);

const Request = exportRequest();

function attribute(key: string, v: TagValue) {
  if (typeof v === 'string') return { key, value: { stringValue: v } };
  if (typeof v === 'boolean') return { key, value: { boolValue: v } };
  if (typeof v === 'number') return { key, value: { intValue: v } };
  return { key, value: { doubleValue: v.double } };
}

const nanos = (seconds: number) => `${seconds}000000000`;

/** One export holding every series given. */
export function metricsBody(series: GenSeries[]): Uint8Array {
  const metrics = series.map((s) => {
    const attributes = Object.entries(s.tags).map(([k, v]) => attribute(k, v));
    const base = { name: s.metric, unit: s.unit ?? '' };
    const temporality = (delta?: boolean) => (delta ? 1 : 2);
    switch (s.kind) {
      case 'gauge':
        return {
          ...base,
          gauge: { dataPoints: s.points.map((p) => ({ timeUnixNano: nanos(p.t), asDouble: p.v, attributes })) },
        };
      case 'sum':
        return {
          ...base,
          sum: {
            isMonotonic: s.monotonic,
            aggregationTemporality: temporality(s.delta),
            dataPoints: s.points.map((p) => ({ timeUnixNano: nanos(p.t), asDouble: p.v, attributes })),
          },
        };
      case 'histogram':
        return {
          ...base,
          histogram: {
            aggregationTemporality: temporality(s.delta),
            dataPoints: s.points.map((p) => ({
              timeUnixNano: nanos(p.t),
              count: p.counts.reduce((a, b) => a + b, 0),
              sum: p.sum,
              ...(p.min === undefined ? {} : { min: p.min }),
              ...(p.max === undefined ? {} : { max: p.max }),
              bucketCounts: p.counts,
              explicitBounds: s.bounds,
              attributes,
            })),
          },
        };
    }
  });
  return Request.encode(Request.fromObject({ resourceMetrics: [{ scopeMetrics: [{ metrics }] }] })).finish();
}
