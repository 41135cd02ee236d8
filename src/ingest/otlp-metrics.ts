/**
 * OTLP/HTTP metrics bodies (protobuf only, as Axiom takes them) as series and points for a metrics dataset
 * (service/metrics/metrics-store.ts), decoded in the OTLP worker like logs and traces (otlp-decoder.ts).
 *
 * What becomes of each OTLP point (README: Metrics):
 * - a series is a metric name and a tag set: the union of the resource's, the scope's and the point's
 *   attributes, the nearest winning a key they share (point over scope over resource);
 * - gauges and sums give one point each, `as_double` or `as_int`; a sum's type is CounterMonotonic or
 *   CounterNonMonotonic with its temporality (Cumulative, Delta), a gauge's Gauge with none;
 * - a histogram point gives the series of its metric with the tag `axiom.histogram`: `count`, `sum`, `min`
 *   and `max` (those sent), and `bucket` with `le` (the bucket's upper bound, `+Inf` for the last) holding
 *   the count up to that bound (cumulative, as Prometheus's `_bucket` series);
 * - a summary point likewise: `count`, `sum`, and `quantile` with `quantile` (the quantile, as text);
 * - times are cut to whole seconds; a point without one takes the receiver's; a value that is not a finite
 *   number (or a point flagged as holding none) is a gap (null).
 * Refused point by point, and counted in the answer's partial_success: exponential histograms, attribute
 * values of type bytes, array or kvlist, names past 256 bytes, tag values past 1 KiB. The output: see
 * MetricLines.
 */
import { createRequire } from 'node:module';
import protobuf from 'protobufjs/minimal.js';
import { IngestBodyError, invalidBody } from './errors.js';
import {
  attributesText,
  type NumberMetric,
  readNumberPoint,
  sameAttributes,
  scannedPoint,
  scanNumberMetric,
  secondsOfNanos,
} from './otlp-number-points.js';
import { POINT_BYTES, type PointColumns, PointColumnsBuilder } from './point-columns.js';
import type { SeriesEntry } from './series-mirror.js';
import {
  type AnyValue,
  decodeAt,
  decodeTo,
  fields,
  type Int64,
  integer,
  type KeyValue,
  lastField,
  type MessageType,
  nanos,
} from './otlp.js';

const definitions = createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js') as {
  opentelemetry: {
    proto: {
      collector: { metrics: { v1: { ExportMetricsServiceResponse: MessageType } } };
      metrics: { v1: { Metric: MessageType } };
      resource: { v1: { Resource: MessageType } };
      common: { v1: { InstrumentationScope: MessageType; KeyValue: MessageType } };
    };
  };
};
const { collector, metrics: metricsProto, resource: resourceProto, common } = definitions.opentelemetry.proto;

/** Axiom's limits on metrics (reference: metrics.md §2.2). */
export const METRICS_MAX_BYTES = 4 * 1024 * 1024;
const MAX_NAME_BYTES = 256;
const MAX_TAG_VALUE_BYTES = 1024;

/** A double attribute: written with its decimal point even when whole, so that it stays a float tag. */
class Double {
  constructor(readonly value: number) {}
  toText(): string {
    const text = JSON.stringify(this.value);
    return /[.eE]/.test(text) ? text : `${text}.0`;
  }
}
type TagValue = string | number | boolean | Double;

interface NumberPoint {
  attributes?: KeyValue[] | null;
  timeUnixNano?: Int64;
  asDouble?: number | null;
  asInt?: Int64;
  flags?: number | null;
}

interface HistogramPoint {
  attributes?: KeyValue[] | null;
  timeUnixNano?: Int64;
  count?: Int64;
  sum?: number | null;
  bucketCounts?: Int64[] | null;
  explicitBounds?: number[] | null;
  min?: number | null;
  max?: number | null;
  flags?: number | null;
}

interface SummaryPoint {
  attributes?: KeyValue[] | null;
  timeUnixNano?: Int64;
  count?: Int64;
  sum?: number | null;
  quantileValues?: { quantile?: number | null; value?: number | null }[] | null;
  flags?: number | null;
}

interface Metric {
  name?: string | null;
  unit?: string | null;
  gauge?: { dataPoints?: NumberPoint[] | null } | null;
  sum?: {
    dataPoints?: NumberPoint[] | null;
    aggregationTemporality?: number | null;
    isMonotonic?: boolean | null;
  } | null;
  histogram?: { dataPoints?: HistogramPoint[] | null; aggregationTemporality?: number | null } | null;
  exponentialHistogram?: { dataPoints?: unknown[] | null } | null;
  summary?: { dataPoints?: SummaryPoint[] | null } | null;
}

/** OTLP's DataPointFlags.FLAG_NO_RECORDED_VALUE. */
const NO_RECORDED_VALUE = 1;
const TEMPORALITY = [null, 'Delta', 'Cumulative'] as const;

/**
 * A body's series and points: each series once (series-mirror.ts's SeriesEntry: its key, its metric's JSON
 * text followed by its tags' as canonical JSON with sorted keys, and the rest of its line), numbered by its
 * place; and the points as columns (point-columns.ts), each naming its series by that number; with what of
 * the body was refused.
 */
export interface MetricLines {
  series: SeriesEntry[];
  columns: PointColumns;
  points: number;
  rejected: number;
  /** Why the first refused point was, for partial_success's error_message. */
  firstRejection?: string;
}

class Refused extends Error {}

function tagValue(v: AnyValue | null | undefined, key: string): TagValue {
  if (!v) throw new Refused(`attribute "${key}" has no value`);
  if (v.stringValue !== null && v.stringValue !== undefined) {
    if (Buffer.byteLength(v.stringValue) > MAX_TAG_VALUE_BYTES)
      throw new Refused(`attribute "${key}" has a value past ${MAX_TAG_VALUE_BYTES} bytes`);
    return v.stringValue;
  }
  if (v.boolValue !== null && v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== null && v.intValue !== undefined) return integer(v.intValue);
  if (v.doubleValue !== null && v.doubleValue !== undefined) {
    if (!Number.isFinite(v.doubleValue)) throw new Refused(`attribute "${key}" is not a finite number`);
    return new Double(v.doubleValue);
  }
  const kind = v.bytesValue ? 'bytes' : v.arrayValue ? 'array' : v.kvlistValue ? 'kvlist' : 'empty';
  throw new Refused(
    `attribute "${key}" is of type ${kind}, which metrics tags cannot hold (string, int, double, bool)`,
  );
}

/** Attributes as tags over `base` (the nearer level's replace the farther's). */
function tagsOf(list: KeyValue[] | null | undefined, base: Record<string, TagValue>): Record<string, TagValue> {
  if (!list || list.length === 0) return base;
  const out: Record<string, TagValue> = Object.assign(Object.create(null) as Record<string, TagValue>, base);
  const seen = new Set<string>();
  for (const kv of list) {
    const key = kv.key ?? '';
    // The first of a repeated key at one level wins, as for events.
    if (seen.has(key)) continue;
    seen.add(key);
    if (Buffer.byteLength(key) > MAX_NAME_BYTES) throw new Refused(`an attribute name is past ${MAX_NAME_BYTES} bytes`);
    out[key] = tagValue(kv.value, key);
  }
  return out;
}

/** Tags as JSON with sorted keys: the same set is the same text. */
function canonical(tags: Record<string, TagValue>): string {
  const keys = Object.keys(tags).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const v = tags[keys[i]!];
    out += `${i ? ',' : ''}${JSON.stringify(keys[i])}:${v instanceof Double ? v.toText() : JSON.stringify(v)}`;
  }
  return `${out}}`;
}

const finite = (v: number | null | undefined): number | null =>
  v === null || v === undefined || !Number.isFinite(v) ? null : v;

function intValue(v: Int64): number {
  if (v === null || v === undefined) return 0;
  return typeof v === 'number' ? v : Number(v.toString());
}

interface SeriesMeta {
  type: string;
  temp: string | null;
  unit: string | null;
}

let unshared = 0;

/** What identifies a point's attributes within a body, cheaply: their keys and typed values in order. */
function signature(list: KeyValue[] | null | undefined): string {
  if (!list || list.length === 0) return '';
  // Each key and value is written after its length: no text can pass for a boundary.
  let sig = '';
  for (const kv of list) {
    const v = kv.value;
    const key = kv.key ?? '';
    let value: string;
    if (!v) value = 'n';
    else if (v.stringValue !== null && v.stringValue !== undefined) value = `s${v.stringValue}`;
    else if (v.intValue !== null && v.intValue !== undefined) value = `i${String(v.intValue)}`;
    else if (v.doubleValue !== null && v.doubleValue !== undefined) value = `d${v.doubleValue}`;
    else if (v.boolValue !== null && v.boolValue !== undefined) value = `b${v.boolValue}`;
    else value = `x${++unshared}`; // refused when described: never shared
    sig += `${key.length}:${key}${value.length}:${value}`;
  }
  return sig;
}

/** A series for this body alone (its gid given when the cache keeps it). */
function describeSeries(metric: string, tags: Record<string, TagValue>, meta: SeriesMeta): SeriesEntry {
  const tagsText = canonical(tags);
  const metricText = JSON.stringify(metric);
  // The series' identity: its metric and its tags as JSON, one text for one series.
  return {
    key: `${metricText}${tagsText}`,
    rest: `"m":${metricText},"tags":${tagsText},"type":${JSON.stringify(meta.type)},"temp":${JSON.stringify(meta.temp)},"unit":${JSON.stringify(meta.unit)}}`,
    gid: -1,
  };
}

/** Series described before, by their points' attribute bytes, for one metric of one scope. */
type MetricSeries = Map<string, SeriesEntry>;
type ScopeSeries = Map<string, MetricSeries>;
type ResourceSeries = Map<string, ScopeSeries>;

/**
 * Gauge and sum series described in earlier bodies, by the bytes that make them, a level each: their
 * resource message's, their scope message's, their metric's name, type, temporality and unit, their
 * point's attributes. A level is looked up once where it is met (a resource's bytes once for all its
 * scopes), so no text is put together or hashed twice for one body's part. An exporter sends the same
 * series export after export, and describing one (its tags merged, sorted and written) costs more than
 * its points. Bounded by the bytes of what it holds, and emptied when full.
 */
export class DescribedSeriesCache {
  private resources = new Map<string, ResourceSeries>();
  private bytes = 0;
  private nextGid = 0;
  /** The first gid given since the cache last started afresh (series-mirror.ts's epoch). */
  epochStart = 0;

  constructor(private readonly capacityBytes: number) {}

  /** Counts what an entry holds, emptying the cache first when it would pass its bound. */
  private charge(bytes: number): void {
    this.bytes += bytes;
    if (this.bytes > this.capacityBytes) {
      // Maps already handed out stay usable for the body being read; the next bodies start afresh.
      this.resources = new Map();
      this.bytes = bytes;
      this.epochStart = this.nextGid;
    }
  }

  private level<T>(parent: Map<string, T>, key: string, make: () => T): T {
    let m = parent.get(key);
    if (m === undefined) {
      this.charge(key.length * 2 + 64);
      parent.set(key, (m = make()));
    }
    return m;
  }

  /** What the bytes held now come to (tests). */
  get heldBytes(): number {
    return this.bytes;
  }

  resource(bytes: string): ResourceSeries {
    return this.level(this.resources, bytes, () => new Map());
  }

  scope(resource: ResourceSeries, bytes: string): ScopeSeries {
    return this.level(resource, bytes, () => new Map());
  }

  metric(scope: ScopeSeries, key: string): MetricSeries {
    return this.level(scope, key, () => new Map());
  }

  /** Keeps a series described for this body, giving it its gid. */
  add(metric: MetricSeries, attributes: string, d: SeriesEntry): void {
    this.charge(attributes.length + (d.key.length + d.rest.length) * 2 + 96);
    d.gid = this.nextGid++;
    metric.set(attributes, d);
  }
}

/** A heap's share the worker gives to series it has described. */
export const described = new DescribedSeriesCache(32 * 1024 * 1024);

/** What gathering a point costs: its columns, twice over while they grow and are laid out. */
const POINT_COST = 3 * POINT_BYTES;

/** Collects the series (each once, numbered) and the points' columns. */
class Lines {
  readonly series: SeriesEntry[] = [];
  private readonly numbers = new Map<string, number>();
  readonly columns = new PointColumnsBuilder();
  bytes = 0;

  constructor(private readonly maxBytes: number) {}

  private charge(bytes: number): void {
    this.bytes += bytes;
    if (this.bytes > this.maxBytes)
      throw new IngestBodyError(
        'too_large',
        `the points of this body would take more than ${this.maxBytes} bytes; send smaller exports`,
      );
  }

  /** A series' number by what identifies it within this body (see metricPoints), before its tags are built. */
  private readonly seen = new Map<string, number>();

  /**
   * A point of the series `seen` names within this body; `describe` makes its tags the first time (and may
   * throw Refused), so the points of a series after its first cost a map lookup.
   */
  point(
    seen: string,
    describe: () => { metric: string; tags: Record<string, TagValue>; meta: SeriesMeta },
    seconds: number,
    value: number | null,
  ): void {
    let n = this.seen.get(seen);
    if (n === undefined) {
      const { metric, tags, meta } = describe();
      n = this.number(metric, tags, meta);
      this.seen.set(seen, n);
    }
    this.add(n, seconds, value);
  }

  /** The number of a series in this body, given it the first time its metric and tags are met. */
  number(metric: string, tags: Record<string, TagValue>, meta: SeriesMeta): number {
    return this.numberOf(describeSeries(metric, tags, meta));
  }

  /** The number of a described series in this body. */
  numberOf(d: SeriesEntry): number {
    let n = this.numbers.get(d.key);
    if (n === undefined) {
      n = this.numbers.size;
      this.numbers.set(d.key, n);
      this.charge(d.key.length * 2 + d.rest.length * 2 + 96);
      this.series.push(d);
    }
    return n;
  }

  /** A point of series n. */
  add(n: number, seconds: number, value: number | null): void {
    this.charge(POINT_COST);
    this.columns.push(n, seconds, value);
  }
}

/** Seconds since the epoch of a point's time, the receiver's when it has none. */
function secondsOf(t: Int64, nowSeconds: number): number {
  // protobufjs hands a fixed64 as a Long: its halves make the count without going through its text.
  if (t && typeof t === 'object' && 'high' in t && 'low' in t) {
    const { high, low } = t as { high: number; low: number };
    return high === 0 && low === 0 ? nowSeconds : secondsOfNanos(high >>> 0, low >>> 0);
  }
  const ns = nanos(t, 'point time');
  return ns === 0n ? nowSeconds : Number(ns / 1_000_000_000n);
}

/**
 * The series of one histogram or summary point: each part (`count`, `sum`, … and each bucket or quantile,
 * told by the tag `by`) a series of the metric with the tag `axiom.histogram`; all gaps when the point is
 * flagged as holding no value.
 */
function parts(
  out: Lines,
  p: {
    name: string;
    seen: string;
    tags: () => Record<string, TagValue>;
    meta: SeriesMeta;
    t: number;
    flags: number | null | undefined;
  },
  by: 'le' | 'quantile',
) {
  const none = ((p.flags ?? 0) & NO_RECORDED_VALUE) !== 0;
  return (what: string, value: number | null, extra: Record<string, TagValue> = {}) =>
    out.point(
      `${p.seen}\u0004${what}\u0004${extra[by] ?? ''}`,
      () => ({ metric: p.name, tags: { ...p.tags(), 'axiom.histogram': what, ...extra }, meta: p.meta }),
      p.t,
      none ? null : value,
    );
}

/** The points a metric holds, of whatever kind. */
function pointCount(m: Metric): number {
  return (
    (m.gauge?.dataPoints?.length ?? 0) +
    (m.sum?.dataPoints?.length ?? 0) +
    (m.histogram?.dataPoints?.length ?? 0) +
    (m.exponentialHistogram?.dataPoints?.length ?? 0) +
    (m.summary?.dataPoints?.length ?? 0)
  );
}

function metricPoints(
  m: Metric,
  base: Record<string, TagValue>,
  baseId: number,
  out: Lines,
  refuse: (n: number, why: string) => void,
  now: number,
): void {
  const name = m.name ?? '';
  const unit = m.unit ? m.unit : null;
  if (name === '' || Buffer.byteLength(name) > MAX_NAME_BYTES) {
    const n = pointCount(m);
    refuse(
      n,
      name === '' ? 'a metric without a name' : `metric name "${name.slice(0, 64)}…" is past ${MAX_NAME_BYTES} bytes`,
    );
    return;
  }
  // A series within this body: the level its base tags come from, the metric, the point's attributes.
  const each = <P extends { attributes?: KeyValue[] | null }>(
    points: P[] | null | undefined,
    f: (p: P, seen: string, tags: () => Record<string, TagValue>) => void,
  ) => {
    for (const p of points ?? []) {
      const seen = `${baseId}\u0003${name}\u0003${signature(p.attributes)}`;
      try {
        f(p, seen, () => tagsOf(p.attributes, base));
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        refuse(1, `metric "${name}": ${e.message}`);
      }
    }
  };
  const numberValue = (p: NumberPoint) =>
    (p.flags ?? 0) & NO_RECORDED_VALUE
      ? null
      : p.asInt !== null && p.asInt !== undefined
        ? intValue(p.asInt)
        : finite(p.asDouble);
  const plain = (meta: SeriesMeta) => (p: NumberPoint, seen: string, tags: () => Record<string, TagValue>) =>
    out.point(
      `${seen}\u0004${meta.type}`,
      () => ({ metric: name, tags: tags(), meta }),
      secondsOf(p.timeUnixNano, now),
      numberValue(p),
    );
  if (m.gauge) {
    each(m.gauge.dataPoints, plain({ type: 'Gauge', temp: null, unit }));
  } else if (m.sum) {
    each(
      m.sum.dataPoints,
      plain({
        type: m.sum.isMonotonic ? 'CounterMonotonic' : 'CounterNonMonotonic',
        temp: TEMPORALITY[m.sum.aggregationTemporality ?? 0] ?? null,
        unit,
      }),
    );
  } else if (m.histogram) {
    const meta = { type: 'Histogram', temp: TEMPORALITY[m.histogram.aggregationTemporality ?? 0] ?? null, unit };
    each(m.histogram.dataPoints, (p, seen, tags) => {
      const t = secondsOf(p.timeUnixNano, now);
      // Checked before any of its series is written: a point is taken whole or refused.
      const bounds = p.explicitBounds ?? [];
      const counts = p.bucketCounts ?? [];
      if (counts.length > 0 && counts.length !== bounds.length + 1)
        throw new Refused(
          `a histogram point with ${counts.length} bucket counts for ${bounds.length} bounds (OTLP asks for one count more than bounds)`,
        );
      for (let i = 0; i < bounds.length; i++)
        if (!Number.isFinite(bounds[i]) || (i > 0 && !(bounds[i]! > bounds[i - 1]!)))
          throw new Refused('a histogram point whose bounds are not finite and increasing');
      const part = parts(out, { name, seen, tags, meta, t, flags: p.flags }, 'le');
      part('count', intValue(p.count));
      if (p.sum !== null && p.sum !== undefined) part('sum', finite(p.sum));
      if (p.min !== null && p.min !== undefined) part('min', finite(p.min));
      if (p.max !== null && p.max !== undefined) part('max', finite(p.max));
      let cumulative = 0;
      (p.bucketCounts ?? []).forEach((c, i) => {
        cumulative += intValue(c);
        part('bucket', cumulative, { le: i < bounds.length ? String(bounds[i]) : '+Inf' });
      });
    });
  } else if (m.summary) {
    const meta = { type: 'Summary', temp: null, unit };
    each(m.summary.dataPoints, (p, seen, tags) => {
      const t = secondsOf(p.timeUnixNano, now);
      const quantiles = (p.quantileValues ?? []).map((q) => q.quantile ?? 0);
      if (new Set(quantiles).size !== quantiles.length || quantiles.some((q) => !(q >= 0 && q <= 1)))
        throw new Refused('a summary point whose quantiles repeat or fall outside 0 to 1');
      const part = parts(out, { name, seen, tags, meta, t, flags: p.flags }, 'quantile');
      part('count', intValue(p.count));
      part('sum', finite(p.sum));
      for (const q of p.quantileValues ?? []) part('quantile', finite(q.value), { quantile: String(q.quantile ?? 0) });
    });
  } else if (m.exponentialHistogram) {
    refuse(
      m.exponentialHistogram.dataPoints?.length ?? 0,
      `metric "${name}" is an exponential histogram, which metrics datasets do not take (as Axiom): export explicit-bucket histograms`,
    );
  }
}

const { KeyValue } = common.v1;

/**
 * A gauge's or a sum's points as otlp-number-points.ts reads them: the same series and points as
 * metricPoints. `base` holds the scope's tags and its series described before (see `described`).
 */
function numberPoints(
  m: NumberMetric,
  body: Buffer,
  reader: protobuf.Reader,
  base: { tags: Record<string, TagValue>; series: () => ScopeSeries },
  out: Lines,
  refuse: (n: number, why: string) => void,
  now: number,
): void {
  const name = m.name;
  if (name === '' || Buffer.byteLength(name) > MAX_NAME_BYTES) {
    refuse(
      m.points.length / 2,
      name === '' ? 'a metric without a name' : `metric name "${name.slice(0, 64)}…" is past ${MAX_NAME_BYTES} bytes`,
    );
    return;
  }
  const meta: SeriesMeta =
    m.kind === 'gauge'
      ? { type: 'Gauge', temp: null, unit: m.unit }
      : {
          type: m.monotonic ? 'CounterMonotonic' : 'CounterNonMonotonic',
          temp: TEMPORALITY[m.temporality] ?? null,
          unit: m.unit,
        };
  // The unit's length first: no unit and name can pass for another pair.
  const unit = meta.unit ?? '';
  const known = described.metric(base.series(), `${meta.type}|${meta.temp}|${unit.length}:${unit}${name}`);
  // Series by the bytes of their points' attributes; a point like the one before it (an export of several
  // times of each series) costs a comparison.
  let p = scanned[0];
  let last = scanned[1];
  let lastNumber = -1;
  for (let k = 0; k < m.points.length; k += 2) {
    readNumberPoint(reader, m.points[k]!, m.points[k + 1]!, p);
    let n = lastNumber >= 0 && sameAttributes(body, p, last) ? lastNumber : -1;
    if (n < 0) {
      const signature = attributesText(body, p);
      let d = known.get(signature);
      if (!d) {
        try {
          const attributes: KeyValue[] = [];
          for (let a = 0; a < p.attributes.length; a += 2) {
            reader.pos = p.attributes[a]!;
            attributes.push(decodeTo(KeyValue, reader, p.attributes[a + 1]!) as KeyValue);
          }
          d = describeSeries(name, tagsOf(attributes, base.tags), meta);
        } catch (e) {
          if (!(e instanceof Refused)) throw e;
          refuse(1, `metric "${name}": ${e.message}`);
          lastNumber = -1;
          continue;
        }
        described.add(known, signature, d);
      }
      n = out.numberOf(d);
    }
    const value = p.flags & NO_RECORDED_VALUE || p.value === undefined ? null : finite(p.value);
    out.add(n, p.noTime ? now : p.seconds, value);
    const was = last;
    last = p;
    p = was;
    lastNumber = n;
  }
}

/** Two points read in turn (the one before kept to compare with), reused by every metric. */
const scanned = [scannedPoint(), scannedPoint()] as const;

/**
 * A decompressed OTLP/HTTP metrics body (protobuf) as series and point lines, one metric decoded at a time;
 * at most what holding the lines costs `maxBytes` (413 beyond). A body that does not decode is a 400.
 */
export function otlpMetricLines(
  body: Buffer,
  maxBytes: number,
  nowSeconds = Math.floor(Date.now() / 1000),
  /** Whether gauges and sums are read from their bytes (otlp-number-points.ts); false: all decoded by protobufjs (tests compare the two). */
  scanNumbers = true,
): MetricLines {
  const out = new Lines(maxBytes);
  let rejected = 0;
  let firstRejection: string | undefined;
  const refuse = (n: number, why: string) => {
    rejected += n;
    firstRejection ??= why;
  };
  // Each scope's base tags are their own: series are told apart within a scope by this number.
  let scopes = 0;
  // A message's bytes as latin1 text (one text for one message), after a mark that tells none from empty.
  const bytesOf = (at: [number, number] | undefined) => (at ? `m${body.toString('latin1', at[0], at[1])}` : '-');
  try {
    const reader = protobuf.Reader.create(body);
    for (const [field, resourceEnd] of fields(reader, body.length, 'the export', 1)) {
      if (field !== 1) continue;
      const resourceStart = reader.pos;
      const resourceAt = lastField(reader, resourceEnd, 'an entry of resourceMetrics', 1);
      const resource = decodeAt(resourceProto.v1.Resource, reader, resourceAt) as {
        attributes?: KeyValue[] | null;
      } | null;
      reader.pos = resourceStart;
      let resourceSeries: ResourceSeries | undefined;
      let resourceTags: Record<string, TagValue> | undefined;
      let resourceRefusal: string | undefined;
      try {
        resourceTags = tagsOf(resource?.attributes, Object.create(null) as Record<string, TagValue>);
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        resourceRefusal = `resource: ${e.message}`;
      }
      for (const [f, scopeEnd] of fields(reader, resourceEnd, 'an entry of resourceMetrics', 2)) {
        if (f !== 2) continue;
        const scopeStart = reader.pos;
        const scopeAt = lastField(reader, scopeEnd, 'an entry of scopeMetrics', 1);
        const scope = decodeAt(common.v1.InstrumentationScope, reader, scopeAt) as {
          attributes?: KeyValue[] | null;
        } | null;
        reader.pos = scopeStart;
        // The series this scope's gauges and sums described before, found when the first is met.
        let scopeSeries: ScopeSeries | undefined;
        const series = () =>
          (scopeSeries ??= described.scope(
            (resourceSeries ??= described.resource(bytesOf(resourceAt))),
            bytesOf(scopeAt),
          ));
        let base = resourceTags;
        let refusal = resourceRefusal;
        const scopeId = ++scopes;
        if (base) {
          try {
            base = tagsOf(scope?.attributes, base);
          } catch (e) {
            if (!(e instanceof Refused)) throw e;
            refusal = `scope: ${e.message}`;
          }
        }
        for (const [g, metricEnd] of fields(reader, scopeEnd, 'an entry of scopeMetrics', 2)) {
          if (g !== 2) continue;
          const metricStart = reader.pos;
          const scanned = scanNumbers ? scanNumberMetric(body, reader, metricEnd) : undefined;
          if (scanned) {
            if (!base || refusal) refuse(scanned.points.length / 2, refusal ?? 'unreadable attributes');
            else numberPoints(scanned, body, reader, { tags: base, series }, out, refuse, nowSeconds);
            continue;
          }
          reader.pos = metricStart;
          const metric = decodeTo(metricsProto.v1.Metric, reader, metricEnd) as Metric;
          if (!base || refusal) {
            const n = pointCount(metric);
            refuse(n, refusal ?? 'unreadable attributes');
            continue;
          }
          metricPoints(metric, base, scopeId, out, refuse, nowSeconds);
        }
      }
    }
  } catch (e) {
    if (e instanceof IngestBodyError) throw e;
    throw invalidBody(`invalid OTLP metrics protobuf body: ${(e as Error).message}`);
  }
  const columns = out.columns.finish();
  return { series: out.series, columns, points: columns.count, rejected, firstRejection };
}

/** The ExportMetricsServiceResponse: empty when all was taken, else its partial_success. */
export function otlpMetricsAnswer(rejected: number, message: string | undefined): Buffer {
  if (rejected === 0) return Buffer.alloc(0);
  const type = collector.metrics.v1.ExportMetricsServiceResponse;
  return Buffer.from(
    type
      .encode(type.fromObject({ partialSuccess: { rejectedDataPoints: rejected, errorMessage: message ?? '' } }))
      .finish(),
  );
}
