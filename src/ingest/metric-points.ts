/**
 * Metric points as events: the form a point takes through the agent's pipeline and disk queue, one NDJSON
 * line each, its tags last:
 *
 *   {"_time":"2026-01-01T00:00:00Z","metric":"system.memory.usage","type":"Gauge","temporality":null,
 *    "unit":"By","value":1048576,"tags":{"state":"used"}}
 *
 * A histogram's or a summary's data point is one event, whole, so that no batch cut and no split parts it:
 * `"histogram":{"count","sum","min","max","buckets":[[bound, count up to it]…, ["+Inf", count]]}` or
 * `"summary":{"count","sum","quantiles":[[q, value]…]}` in place of `value` (nulls: a point that holds no
 * value). The host_metrics source makes them, the otlp source makes them from OTLP metrics (otlp-metrics.ts's
 * series and points); the local sink reads them back into series and points as the service stores them
 * (a histogram's parts as `axiom.histogram` series), the axiom sink into OTLP (otlp-metrics-encode.ts).
 * Tags keep their text: a whole-number float tag (`2.0`) stays a float. Pure.
 */

import { type PointColumns, PointColumnsBuilder } from './point-columns.js';
import type { SeriesEntry } from './series-mirror.js';

export type TagValue = string | number | boolean;

export interface HistogramValue {
  count: number | null;
  sum?: number | null;
  min?: number | null;
  max?: number | null;
  /** Cumulative counts by upper bound, in order; the last bound is +Inf. */
  buckets: [number, number | null][];
}

export interface SummaryValue {
  count: number | null;
  sum?: number | null;
  quantiles: [number, number | null][];
}

export interface MetricPoint {
  /** Unix seconds. */
  time: number;
  metric: string;
  /** Gauge, CounterMonotonic, CounterNonMonotonic, Histogram, Summary. */
  type: string;
  temporality: string | null;
  unit: string | null;
  tags: Record<string, TagValue>;
  /** The tags as sorted JSON text as they came (their numbers written as sent); absent after a transform reordered them. */
  tagsText?: string;
  /** null: a gap. */
  value: number | null;
  histogram?: HistogramValue;
  summary?: SummaryValue;
}

export const METRIC_TYPES = ['Gauge', 'CounterMonotonic', 'CounterNonMonotonic', 'Histogram', 'Summary'];
const MAX_NAME_BYTES = 256;
const MAX_POINT_SECONDS = 9_223_372_036;
const MAX_TAG_VALUE_BYTES = 1024;
/** The tag that names a histogram's or summary's part, and the tags of a bucket's bound and a quantile. */
const PART = 'axiom.histogram';

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
const num = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? 'null' : String(v);
const boundText = (b: number) => (b === Infinity ? '"+Inf"' : String(b));

/** A point's event line. */
export function pointEvent(p: MetricPoint): string {
  const head = `{"_time":"${iso(p.time)}","metric":${JSON.stringify(p.metric)},"type":${JSON.stringify(p.type)},"temporality":${JSON.stringify(p.temporality)},"unit":${JSON.stringify(p.unit)}`;
  const tags = p.tagsText ?? canonicalTags(p.tags);
  if (p.histogram) return `${head},"histogram":${histogramText(p.histogram)},"tags":${tags}}`;
  if (p.summary) return `${head},"summary":${summaryText(p.summary)},"tags":${tags}}`;
  return `${head},"value":${num(p.value)},"tags":${tags}}`;
}

/** A statistic that was sent (null: sent, holding no value); one not sent is left out. */
const optional = (name: string, v: number | null | undefined) => (v === undefined ? '' : `,"${name}":${num(v)}`);

function histogramText(h: HistogramValue): string {
  const buckets = h.buckets.map(([b, c]) => `[${boundText(b)},${num(c)}]`).join(',');
  return `{"count":${num(h.count)}${optional('sum', h.sum)}${optional('min', h.min)}${optional('max', h.max)},"buckets":[${buckets}]}`;
}

function summaryText(s: SummaryValue): string {
  const quantiles = s.quantiles.map(([q, v]) => `[${q},${num(v)}]`).join(',');
  return `{"count":${num(s.count)}${optional('sum', s.sum)},"quantiles":[${quantiles}]}`;
}

/** Tags as JSON with sorted keys: one set, one text (the series' identity with its metric). */
export function canonicalTags(tags: Record<string, TagValue>): string {
  return `{${Object.keys(tags)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(tags[k])}`)
    .join(',')}}`;
}

/** The `"key":value` entries of a flat JSON object's text, as written. */
function entries(text: string): string[] {
  const out: string[] = [];
  let start = 1;
  let inString = false;
  for (let i = 1; i < text.length - 1; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === ',') {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (text.length > 2) out.push(text.slice(start, text.length - 1));
  return out;
}

const keyOf = (entry: string) => JSON.parse(entry.slice(0, entry.indexOf('":') + 1)) as string;

/** Tags text without some keys, or with entries added, kept sorted. */
function editTags(text: string, drop: readonly string[], add: [string, string][] = []): string {
  const kept = entries(text).filter((e) => !drop.includes(keyOf(e)));
  for (const [k, v] of add) kept.push(`${JSON.stringify(k)}:${JSON.stringify(v)}`);
  kept.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  return `{${kept.join(',')}}`;
}

/** Which tags are floats in their text (written with a point or an exponent). */
export function floatTags(text: string): Set<string> {
  const out = new Set<string>();
  for (const e of entries(text)) {
    const v = e.slice(e.indexOf('":') + 2);
    if (/^-?\d/.test(v) && /[.eE]/.test(v)) out.add(keyOf(e));
  }
  return out;
}

interface Gathered {
  head: string;
  tags: string;
  time: number;
  histogram: boolean;
  count: number | null;
  sum?: number | null;
  min?: number | null;
  max?: number | null;
  by: [number, number | null][];
}

/** Points made into events in one turn of the event loop. */
const POINTS_PER_TURN = 5_000;

/**
 * The events of otlp-metrics.ts's decoded export: `series` its series (series-mirror.ts), `points` the
 * points naming them by their place; a histogram's or summary's parts at one time become one event again.
 * A large export is made a part at a time, the event loop let go between parts.
 */
export async function pointEventsOf(series: readonly SeriesEntry[], points: PointColumns): Promise<string[]> {
  const heads: { head: string; tags: string; part?: string; by?: number }[] = [];
  for (const entry of series) {
    const line = `{${entry.rest}`;
    const s = JSON.parse(line) as {
      m: string;
      tags: Record<string, TagValue>;
      type: string;
      temp: string | null;
      unit: string | null;
    };
    // The tags' text as the decoder wrote it (sorted; a whole double keeps its decimal point).
    const tags = line.slice(line.indexOf('"tags":') + 7, line.lastIndexOf(',"type":'));
    const head = `"metric":${JSON.stringify(s.m)},"type":${JSON.stringify(s.type)},"temporality":${JSON.stringify(s.temp)},"unit":${JSON.stringify(s.unit)}`;
    const part = s.tags[PART];
    if ((s.type === 'Histogram' || s.type === 'Summary') && typeof part === 'string') {
      const by = part === 'bucket' ? s.tags.le : part === 'quantile' ? s.tags.quantile : undefined;
      heads.push({
        head,
        tags: editTags(tags, [PART, 'le', 'quantile']),
        part,
        by: by === undefined ? undefined : by === '+Inf' ? Infinity : Number(by),
      });
    } else heads.push({ head, tags });
  }
  const out: string[] = [];
  const gathered = new Map<string, Gathered>();
  // Points of an export mostly share their times: each time's text is made once in a row.
  let lastTime = NaN;
  let lastIso = '';
  for (let i = 0; i < points.count; i++) {
    if (i > 0 && i % POINTS_PER_TURN === 0) await new Promise((r) => setImmediate(r));
    const h = heads[points.series[i]!]!;
    const t = points.seconds[i]!;
    const value = points.value(i);
    if (h.part === undefined) {
      if (t !== lastTime) {
        lastTime = t;
        lastIso = iso(t);
      }
      out.push(`{"_time":"${lastIso}",${h.head},"value":${num(value)},"tags":${h.tags}}`);
      continue;
    }
    const key = `${h.head}\u0000${h.tags}\u0000${t}`;
    let g = gathered.get(key);
    if (!g) {
      gathered.set(
        key,
        (g = {
          head: h.head,
          tags: h.tags,
          time: t,
          histogram: h.head.includes('"type":"Histogram"'),
          count: null,
          by: [],
        }),
      );
      out.push(key); // its place, filled in below
    }
    if (h.part === 'count') g.count = value;
    else if (h.part === 'sum' || h.part === 'min' || h.part === 'max') g[h.part] = value;
    else if (h.by !== undefined) g.by.push([h.by, value]);
  }
  if (gathered.size === 0) return out;
  return out.map((line) => {
    const g = gathered.get(line);
    if (!g) return line;
    const by = g.by.sort((x, y) => x[0] - y[0]);
    const value = g.histogram
      ? `"histogram":${histogramText({ count: g.count, sum: g.sum, min: g.min, max: g.max, buckets: by })}`
      : `"summary":${summaryText({ count: g.count, sum: g.sum, quantiles: by })}`;
    return `{"_time":"${iso(g.time)}",${g.head},${value},"tags":${g.tags}}`;
  });
}

/** A batch's NDJSON text as its lines (a batch ends with a newline). */
export function batchLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

const isNum = (x: unknown): x is number | null => x === null || (typeof x === 'number' && Number.isFinite(x));

/** A point event read back; a string says why the line is not one. */
export function readPointEvent(line: string): MetricPoint | string {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return 'not a JSON object';
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'not a JSON object';
  const metric = v.metric;
  if (typeof metric !== 'string' || metric === '' || Buffer.byteLength(metric) > MAX_NAME_BYTES)
    return `"metric" must be a name of 1 to ${MAX_NAME_BYTES} bytes`;
  const time = typeof v._time === 'number' ? v._time : typeof v._time === 'string' ? Date.parse(v._time) / 1000 : NaN;
  // Times an int64 of nanoseconds holds, as the OTLP path takes them.
  if (!(Math.abs(time) <= MAX_POINT_SECONDS))
    return `metric "${metric}": "_time" must be an RFC 3339 time between 1677 and 2262`;
  const type = v.type ?? 'Gauge';
  if (typeof type !== 'string' || !METRIC_TYPES.includes(type))
    return `metric "${metric}": "type" must be one of ${METRIC_TYPES.join(', ')}`;
  const tags = v.tags ?? {};
  if (typeof tags !== 'object' || tags === null || Array.isArray(tags))
    return `metric "${metric}": "tags" must be an object`;
  const keys = Object.keys(tags);
  for (const k of keys) {
    const t = (tags as Record<string, unknown>)[k];
    if (Buffer.byteLength(k) > MAX_NAME_BYTES) return `metric "${metric}": a tag name is past ${MAX_NAME_BYTES} bytes`;
    if (
      typeof t === 'string'
        ? Buffer.byteLength(t) > MAX_TAG_VALUE_BYTES
        : typeof t !== 'number' && typeof t !== 'boolean'
    )
      return `metric "${metric}": tag "${k}" must be a string (up to ${MAX_TAG_VALUE_BYTES} bytes), a number or a bool`;
  }
  const text = (x: unknown) => (typeof x === 'string' && x !== '' ? x : null);
  const p: MetricPoint = {
    time: Math.floor(time),
    metric,
    type,
    temporality: text(v.temporality),
    unit: text(v.unit),
    tags: tags as Record<string, TagValue>,
    value: null,
  };
  // The tags' own text, when the line ends with them sorted as written (an event no transform rewrote).
  const at = line.lastIndexOf(',"tags":{');
  if (at >= 0 && line.endsWith('}}') && keys.every((k, i) => i === 0 || keys[i - 1]! < k)) {
    const raw = line.slice(at + 8, -1);
    if (entries(raw).length === keys.length) p.tagsText = raw;
  }
  if (type === 'Histogram' && v.histogram !== undefined) {
    const h = v.histogram as Record<string, unknown> | null;
    const buckets = h?.buckets;
    if (
      !h ||
      !isNum(h.count) ||
      ![h.sum, h.min, h.max].every((x) => x === undefined || isNum(x)) ||
      !Array.isArray(buckets) ||
      !buckets.every(
        (b) => Array.isArray(b) && b.length === 2 && (typeof b[0] === 'number' || b[0] === '+Inf') && isNum(b[1]),
      )
    )
      return `metric "${metric}": "histogram" must hold count, sum, min, max and buckets ([bound, count] pairs)`;
    p.histogram = {
      count: h.count,
      sum: h.sum as number | null | undefined,
      min: h.min as number | null | undefined,
      max: h.max as number | null | undefined,
      buckets: (buckets as [number | '+Inf', number | null][]).map(([b, c]) => [b === '+Inf' ? Infinity : b, c]),
    };
    return p;
  }
  if (type === 'Summary' && v.summary !== undefined) {
    const s = v.summary as Record<string, unknown> | null;
    const qs = s?.quantiles;
    if (
      !s ||
      !isNum(s.count) ||
      !(s.sum === undefined || isNum(s.sum)) ||
      !Array.isArray(qs) ||
      !qs.every((q) => Array.isArray(q) && q.length === 2 && typeof q[0] === 'number' && isNum(q[1]))
    )
      return `metric "${metric}": "summary" must hold count, sum and quantiles ([quantile, value] pairs)`;
    p.summary = { count: s.count, sum: s.sum as number | null | undefined, quantiles: qs as [number, number | null][] };
    return p;
  }
  if (!isNum(v.value)) return `metric "${metric}": "value" must be a number or null`;
  p.value = v.value;
  return p;
}

/**
 * Point events as what the metrics store loads (metrics-store.ts's ingest): their series
 * (series-mirror.ts) and the points' columns, a histogram's and a summary's parts as the service makes
 * them; lines that are not point events are refused, each with its reason.
 */
export function metricLinesOf(lines: string[]): {
  series: SeriesEntry[];
  columns: PointColumns;
  refused: string[];
  points: number;
} {
  const numbers = new Map<string, number>();
  const series: SeriesEntry[] = [];
  const refused: string[] = [];
  const columns = new PointColumnsBuilder();
  const add = (p: MetricPoint, tags: string, value: number | null | undefined) => {
    const metric = JSON.stringify(p.metric);
    const key = `${metric}${tags}`;
    let n = numbers.get(key);
    if (n === undefined) {
      numbers.set(key, (n = numbers.size));
      series.push({
        key,
        rest: `"m":${metric},"tags":${tags},"type":${JSON.stringify(p.type)},"temp":${JSON.stringify(p.temporality)},"unit":${JSON.stringify(p.unit)}}`,
        gid: -1,
      });
    }
    columns.push(n, p.time, value ?? null);
  };
  for (const line of lines) {
    const p = readPointEvent(line);
    if (typeof p === 'string') {
      refused.push(p);
      continue;
    }
    const tags = p.tagsText ?? canonicalTags(p.tags);
    const part = (what: string, value: number | null | undefined, extra: [string, string][] = []) =>
      add(p, editTags(tags, [], [[PART, what], ...extra]), value);
    if (p.histogram) {
      const h = p.histogram;
      part('count', h.count);
      for (const k of ['sum', 'min', 'max'] as const) if (h[k] !== undefined) part(k, h[k]);
      for (const [b, c] of h.buckets) part('bucket', c, [['le', b === Infinity ? '+Inf' : String(b)]]);
    } else if (p.summary) {
      const s = p.summary;
      part('count', s.count);
      if (s.sum !== undefined) part('sum', s.sum);
      for (const [q, v] of s.quantiles) part('quantile', v, [['quantile', String(q)]]);
    } else add(p, tags, p.value);
  }
  const built = columns.finish();
  return { series, columns: built, refused, points: built.count };
}
