/**
 * Point events (metric-points.ts) → an OTLP ExportMetricsServiceRequest (protobuf), what the axiom sink
 * posts to {url}/v1/metrics: gauges as gauges, counters as sums (monotonic or not, with their temporality),
 * and a histogram's or summary's parts (series with `axiom.histogram`) put back together into one data
 * point per series and time: count, sum, min, max and buckets (the cumulative `le` counts taken apart),
 * or count, sum and quantiles. So a point that came in over OTLP leaves as it came.
 */
import { createRequire } from 'node:module';
import type { MetricPoint, TagValue } from './metric-points.js';

interface MessageClass {
  encode(m: unknown): { finish(): Uint8Array };
  fromObject(o: object): unknown;
}

let request: MessageClass | undefined;

/**
 * The generated ExportMetricsServiceRequest, loaded on the first metrics batch (an agent that ships none
 * never loads the definitions); tests and benches make their bodies with it too.
 */
export function exportRequest(): MessageClass {
  request ??= (
    createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js') as {
      opentelemetry: { proto: { collector: { metrics: { v1: { ExportMetricsServiceRequest: MessageClass } } } } };
    }
  ).opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
  return request;
}

const PART = 'axiom.histogram';

function attributes(tags: Record<string, TagValue>) {
  return Object.entries(tags).map(([key, v]) => ({
    key,
    value:
      typeof v === 'string'
        ? { stringValue: v }
        : typeof v === 'boolean'
          ? { boolValue: v }
          : Number.isInteger(v)
            ? { intValue: v }
            : { doubleValue: v },
  }));
}

const nanos = (seconds: number) => `${seconds}000000000`;
const temporality = (t: string | null) => (t === 'Delta' ? 1 : 2);

/** A histogram's or summary's point, gathered from its parts. */
interface Gathered {
  tags: Record<string, TagValue>;
  time: number;
  count?: number;
  sum?: number;
  min?: number;
  max?: number;
  /** Cumulative counts by bound (histogram), or values by quantile (summary). */
  by: Map<number, number>;
}

export function encodeMetricsExport(points: MetricPoint[]): Uint8Array {
  const metrics = new Map<
    string,
    {
      name: string;
      unit: string;
      type: string;
      temporality: string | null;
      data: unknown[];
      parts: Map<string, Gathered>;
    }
  >();
  for (const p of points) {
    const id = `${p.metric}\u0000${p.type}\u0000${p.temporality}\u0000${p.unit}`;
    let m = metrics.get(id);
    if (!m)
      metrics.set(
        id,
        (m = {
          name: p.metric,
          unit: p.unit ?? '',
          type: p.type,
          temporality: p.temporality,
          data: [],
          parts: new Map(),
        }),
      );
    const part = p.tags[PART];
    if ((p.type === 'Histogram' || p.type === 'Summary') && typeof part === 'string') {
      const { [PART]: _part, le, quantile, ...tags } = p.tags;
      const key = `${p.time}\u0000${JSON.stringify(Object.entries(tags).sort())}`;
      let g = m.parts.get(key);
      if (!g) m.parts.set(key, (g = { tags, time: p.time, by: new Map() }));
      if (p.value === null) continue;
      if (part === 'count' || part === 'sum' || part === 'min' || part === 'max') g[part] = p.value;
      else if (part === 'bucket' && le !== undefined) g.by.set(le === '+Inf' ? Infinity : Number(le), p.value);
      else if (part === 'quantile' && quantile !== undefined) g.by.set(Number(quantile), p.value);
      continue;
    }
    m.data.push({
      timeUnixNano: nanos(p.time),
      attributes: attributes(p.tags),
      ...(p.value === null ? { flags: 1 } : { asDouble: p.value }),
    });
  }
  const out: unknown[] = [];
  for (const m of metrics.values()) {
    const base = { name: m.name, unit: m.unit };
    for (const g of m.parts.values()) m.data.push(m.type === 'Histogram' ? histogramPoint(g) : summaryPoint(g));
    if (m.data.length === 0) continue;
    if (m.type === 'Histogram')
      out.push({ ...base, histogram: { aggregationTemporality: temporality(m.temporality), dataPoints: m.data } });
    else if (m.type === 'Summary') out.push({ ...base, summary: { dataPoints: m.data } });
    else if (m.type === 'CounterMonotonic' || m.type === 'CounterNonMonotonic')
      out.push({
        ...base,
        sum: {
          isMonotonic: m.type === 'CounterMonotonic',
          aggregationTemporality: temporality(m.temporality),
          dataPoints: m.data,
        },
      });
    else out.push({ ...base, gauge: { dataPoints: m.data } });
  }
  const R = exportRequest();
  return R.encode(
    R.fromObject({ resourceMetrics: [{ scopeMetrics: [{ scope: { name: 'ferry' }, metrics: out }] }] }),
  ).finish();
}

function histogramPoint(g: Gathered) {
  const bounds = [...g.by.keys()].sort((a, b) => a - b);
  const finite = bounds.filter((b) => Number.isFinite(b));
  const counts: number[] = [];
  let below = 0;
  for (const b of finite) {
    const c = g.by.get(b)!;
    counts.push(Math.max(0, c - below));
    below = c;
  }
  const total = g.count ?? g.by.get(Infinity) ?? below;
  counts.push(Math.max(0, total - below));
  return {
    timeUnixNano: nanos(g.time),
    attributes: attributes(g.tags),
    count: total,
    ...(g.sum === undefined ? {} : { sum: g.sum }),
    ...(g.min === undefined ? {} : { min: g.min }),
    ...(g.max === undefined ? {} : { max: g.max }),
    explicitBounds: finite,
    bucketCounts: counts,
  };
}

function summaryPoint(g: Gathered) {
  return {
    timeUnixNano: nanos(g.time),
    attributes: attributes(g.tags),
    count: g.count ?? 0,
    sum: g.sum ?? 0,
    quantileValues: [...g.by.entries()].sort((a, b) => a[0] - b[0]).map(([quantile, value]) => ({ quantile, value })),
  };
}
