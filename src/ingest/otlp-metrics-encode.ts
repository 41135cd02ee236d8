/**
 * Point events (metric-points.ts) → an OTLP ExportMetricsServiceRequest (protobuf), what the axiom sink
 * posts to {url}/v1/metrics: gauges as gauges, counters as sums (monotonic or not, with their temporality),
 * histograms with their bounds and bucket counts (the cumulative counts taken apart again) and summaries
 * with their quantiles; a point holding no value is flagged so. Tags keep their types: a float written
 * `2.0` stays a double, an integer past what an int64 holds goes as a double. So a point that came in over
 * OTLP leaves as it came.
 */
import { createRequire } from 'node:module';
import {
  floatTags,
  type HistogramValue,
  type MetricPoint,
  readPointEvent,
  type SummaryValue,
  type TagValue,
} from './metric-points.js';

interface MessageClass {
  encode(m: unknown): { finish(): Uint8Array };
  fromObject(o: object): unknown;
  decode(b: Uint8Array): unknown;
}

interface Definitions {
  opentelemetry: {
    proto: {
      collector: {
        metrics: { v1: { ExportMetricsServiceRequest: MessageClass; ExportMetricsServiceResponse: MessageClass } };
      };
    };
  };
}

let definitions: Definitions | undefined;

/** The generated OTLP definitions, loaded on the first metrics batch (an agent that ships none never loads them). */
function otlp(): Definitions['opentelemetry']['proto']['collector']['metrics']['v1'] {
  definitions ??= createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js') as Definitions;
  return definitions.opentelemetry.proto.collector.metrics.v1;
}

/** ExportMetricsServiceRequest: tests and benches make their bodies with it too. */
export const exportRequest = (): MessageClass => otlp().ExportMetricsServiceRequest;

const NO_RECORDED_VALUE = 1;
const INT64_SAFE = 2 ** 63;

function attributes(tags: Record<string, TagValue>, floats: Set<string>) {
  return Object.entries(tags).map(([key, v]) => ({
    key,
    value:
      typeof v === 'string'
        ? { stringValue: v }
        : typeof v === 'boolean'
          ? { boolValue: v }
          : Number.isInteger(v) && !floats.has(key) && Math.abs(v) < INT64_SAFE
            ? { intValue: v }
            : { doubleValue: v },
  }));
}

/**
 * A time in whole seconds as a fixed64 of nanoseconds, as the halves protobufjs writes: seconds × 10^9 is
 * seconds × 1,953,125 × 2^9, each step exact in a double below 4,000,000,000 s (2096); beyond, and before
 * 1970, the count's text (no BigInt or Long for every point).
 */
function nanos(seconds: number): { low: number; high: number } | string {
  if (!(seconds >= 0 && seconds < 4_000_000_000)) return `${seconds}000000000`;
  const a = seconds * 1_953_125;
  return { low: ((a % 8_388_608) * 512) >>> 0, high: Math.floor(a / 8_388_608) >>> 0 };
}
const temporality = (t: string | null) => (t === 'Delta' ? 1 : 2);
const given = (name: string, v: number | null | undefined) => (v === undefined || v === null ? {} : { [name]: v });

function histogramPoint(h: HistogramValue) {
  const finite = h.buckets.filter(([b]) => Number.isFinite(b));
  if (h.count === null) {
    // A point that holds no value: its bounds, and the flag that says so.
    const zero = (v: number | null | undefined) => (v === undefined ? undefined : 0);
    return {
      flags: NO_RECORDED_VALUE,
      count: 0,
      ...given('sum', zero(h.sum)),
      ...given('min', zero(h.min)),
      ...given('max', zero(h.max)),
      explicitBounds: finite.map(([b]) => b),
      bucketCounts: h.buckets.map(() => 0),
    };
  }
  const counts: number[] = [];
  let below = 0;
  for (const [, c] of finite) {
    counts.push(Math.max(0, (c ?? below) - below));
    below = c ?? below;
  }
  counts.push(Math.max(0, h.count - below));
  return {
    count: h.count,
    ...given('sum', h.sum),
    ...given('min', h.min),
    ...given('max', h.max),
    explicitBounds: finite.map(([b]) => b),
    bucketCounts: counts,
  };
}

function summaryPoint(s: SummaryValue) {
  if (s.count === null) return { flags: NO_RECORDED_VALUE, count: 0, sum: 0, quantileValues: [] };
  return {
    count: s.count,
    sum: s.sum ?? 0,
    quantileValues: s.quantiles.map(([quantile, value]) => ({ quantile, value: value ?? 0 })),
  };
}

export function encodeMetricsExport(points: MetricPoint[]): Uint8Array {
  const metrics = new Map<
    string,
    { name: string; unit: string; type: string; temporality: string | null; data: unknown[] }
  >();
  for (const p of points) {
    const id = `${p.metric}\u0000${p.type}\u0000${p.temporality}\u0000${p.unit}`;
    let m = metrics.get(id);
    if (!m)
      metrics.set(id, (m = { name: p.metric, unit: p.unit ?? '', type: p.type, temporality: p.temporality, data: [] }));
    const base = {
      timeUnixNano: nanos(p.time),
      attributes: attributes(p.tags, p.tagsText ? floatTags(p.tagsText) : new Set()),
    };
    if (p.histogram) m.data.push({ ...base, ...histogramPoint(p.histogram) });
    else if (p.summary) m.data.push({ ...base, ...summaryPoint(p.summary) });
    else m.data.push({ ...base, ...(p.value === null ? { flags: NO_RECORDED_VALUE } : { asDouble: p.value }) });
  }
  const out: unknown[] = [];
  for (const m of metrics.values()) {
    const base = { name: m.name, unit: m.unit };
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
  // Encoded as built: every field already has its wire type's JavaScript form (fromObject's conversions
  // were a fifth of the batch's time).
  return exportRequest()
    .encode({ resourceMetrics: [{ scopeMetrics: [{ scope: { name: 'ferry' }, metrics: out }] }] })
    .finish();
}

/** Point events read and encoded in one turn of the event loop. */
const POINTS_PER_TURN = 2_000;

/**
 * Point events (a batch's lines) as one export, read and encoded a part at a time with the event loop let
 * go between parts, so a large batch holds up no other work for long: an export is its ResourceMetrics
 * entries one after another, so the parts' encodings laid end to end are one export. Lines that are not
 * point events are refused, each with its reason; `body` is undefined when no line was one.
 */
export async function encodeMetricsExportInParts(
  lines: readonly string[],
): Promise<{ body: Buffer | undefined; refused: string[] }> {
  const parts: Uint8Array[] = [];
  const refused: string[] = [];
  for (let from = 0; from < lines.length; from += POINTS_PER_TURN) {
    if (from > 0) await new Promise((r) => setImmediate(r));
    const points: MetricPoint[] = [];
    for (const line of lines.slice(from, from + POINTS_PER_TURN)) {
      const p = readPointEvent(line);
      if (typeof p === 'string') refused.push(p);
      else points.push(p);
    }
    if (points.length > 0) parts.push(encodeMetricsExport(points));
  }
  return { body: parts.length ? Buffer.concat(parts) : undefined, refused };
}

/** What an ExportMetricsServiceResponse's partial_success says was refused, or undefined for none (or no protobuf). */
export function metricsRejection(body: Buffer): string | undefined {
  if (body.length === 0) return undefined;
  let r: { partialSuccess?: { rejectedDataPoints?: unknown; errorMessage?: string } | null };
  try {
    r = otlp().ExportMetricsServiceResponse.decode(body) as typeof r;
  } catch {
    return undefined; // not an OTLP answer (a proxy's page): the points were taken, as its 200 says
  }
  const rejected = Number(r.partialSuccess?.rejectedDataPoints ?? 0);
  if (!(rejected > 0)) return undefined;
  return `the receiver refused ${rejected} point(s): ${r.partialSuccess?.errorMessage || 'no reason given'}`;
}
