/**
 * Metric points as events: the form a point takes through the agent's pipeline and disk queue, one NDJSON
 * line each, `{"_time":"2026-01-01T00:00:00Z","metric":"system.memory.usage","type":"Gauge",
 * "temporality":null,"unit":"By","tags":{"state":"used"},"value":1048576}` (a histogram's and a summary's
 * parts as the service stores them: series with the tag `axiom.histogram`). The host_metrics source makes
 * them, the otlp source makes them from OTLP metrics (otlp-metrics.ts's series and points); the local sink
 * reads them back into series and points for a metrics dataset, the axiom sink into OTLP (otlp-metrics-encode.ts).
 * Pure.
 */

export type TagValue = string | number | boolean;

export interface MetricPoint {
  /** Unix seconds. */
  time: number;
  metric: string;
  /** Gauge, CounterMonotonic, CounterNonMonotonic, Histogram, Summary. */
  type: string;
  temporality: string | null;
  unit: string | null;
  tags: Record<string, TagValue>;
  /** null: a gap. */
  value: number | null;
}

export const METRIC_TYPES = ['Gauge', 'CounterMonotonic', 'CounterNonMonotonic', 'Histogram', 'Summary'];
const MAX_NAME_BYTES = 256;
const MAX_TAG_VALUE_BYTES = 1024;

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/** A point's event line. */
export function pointEvent(p: MetricPoint): string {
  return `{"_time":"${iso(p.time)}","metric":${JSON.stringify(p.metric)},"type":${JSON.stringify(p.type)},"temporality":${JSON.stringify(p.temporality)},"unit":${JSON.stringify(p.unit)},"tags":${canonicalTags(p.tags)},"value":${p.value === null || !Number.isFinite(p.value) ? 'null' : p.value}}`;
}

/** Tags as JSON with sorted keys: one set, one text (the series' identity with its metric). */
export function canonicalTags(tags: Record<string, TagValue>): string {
  const keys = Object.keys(tags).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++)
    out += `${i ? ',' : ''}${JSON.stringify(keys[i])}:${JSON.stringify(tags[keys[i]!])}`;
  return `${out}}`;
}

/**
 * The events of otlp-metrics.ts's decoded export: `series` holds each series' key and line
 * (`{"i":n,"m":…,"tags":…,"type":…,"temp":…,"unit":…}`), `pointsCsv` a line a point (`i,t,v`).
 */
export function pointEventsOf(series: string[], pointsCsv: string): string[] {
  const heads: string[] = [];
  for (let i = 1; i < series.length; i += 2) {
    const s = JSON.parse(series[i]!) as {
      m: string;
      tags: unknown;
      type: string;
      temp: string | null;
      unit: string | null;
    };
    // The tags' text as the decoder wrote it (sorted, a whole double keeps its decimal point).
    const line = series[i]!;
    const tags = line.slice(line.indexOf('"tags":') + 7, line.lastIndexOf(',"type":'));
    heads.push(
      `"metric":${JSON.stringify(s.m)},"type":${JSON.stringify(s.type)},"temporality":${JSON.stringify(s.temp)},"unit":${JSON.stringify(s.unit)},"tags":${tags}`,
    );
  }
  const out: string[] = [];
  let at = 0;
  while (at < pointsCsv.length) {
    const end = pointsCsv.indexOf('\n', at);
    const row = pointsCsv.slice(at, end < 0 ? pointsCsv.length : end);
    at = end < 0 ? pointsCsv.length : end + 1;
    const a = row.indexOf(',');
    const b = row.indexOf(',', a + 1);
    const v = row.slice(b + 1);
    out.push(
      `{"_time":"${iso(Number(row.slice(a + 1, b)))}",${heads[Number(row.slice(0, a))]!},"value":${v === '' ? 'null' : v}}`,
    );
  }
  return out;
}

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
  if (!Number.isFinite(time)) return `metric "${metric}": "_time" must be an RFC 3339 time`;
  const value = v.value;
  if (value !== null && (typeof value !== 'number' || !Number.isFinite(value)))
    return `metric "${metric}": "value" must be a number or null`;
  const type = v.type ?? 'Gauge';
  if (typeof type !== 'string' || !METRIC_TYPES.includes(type))
    return `metric "${metric}": "type" must be one of ${METRIC_TYPES.join(', ')}`;
  const tags = v.tags ?? {};
  if (typeof tags !== 'object' || tags === null || Array.isArray(tags))
    return `metric "${metric}": "tags" must be an object`;
  for (const [k, t] of Object.entries(tags as Record<string, unknown>)) {
    if (Buffer.byteLength(k) > MAX_NAME_BYTES) return `metric "${metric}": a tag name is past ${MAX_NAME_BYTES} bytes`;
    if (
      typeof t === 'string'
        ? Buffer.byteLength(t) > MAX_TAG_VALUE_BYTES
        : typeof t !== 'number' && typeof t !== 'boolean'
    )
      return `metric "${metric}": tag "${k}" must be a string (up to ${MAX_TAG_VALUE_BYTES} bytes), a number or a bool`;
  }
  const text = (x: unknown) => (typeof x === 'string' && x !== '' ? x : null);
  return {
    time: Math.floor(time),
    metric,
    type,
    temporality: text(v.temporality),
    unit: text(v.unit),
    tags: tags as Record<string, TagValue>,
    value: value as number | null,
  };
}

/**
 * Point events as what the metrics store loads (metrics-store.ts's ingest): each series' key and line,
 * and a CSV line a point; lines that are not point events are refused, each with its reason.
 */
export function metricLinesOf(lines: string[]): { series: string[]; pointsCsv: string; refused: string[] } {
  const numbers = new Map<string, number>();
  const series: string[] = [];
  const refused: string[] = [];
  let csv = '';
  for (const line of lines) {
    const p = readPointEvent(line);
    if (typeof p === 'string') {
      refused.push(p);
      continue;
    }
    const tags = canonicalTags(p.tags);
    const metric = JSON.stringify(p.metric);
    const key = `${metric}${tags}`;
    let n = numbers.get(key);
    if (n === undefined) {
      numbers.set(key, (n = numbers.size));
      series.push(
        key,
        `{"i":${n},"m":${metric},"tags":${tags},"type":${JSON.stringify(p.type)},"temp":${JSON.stringify(p.temporality)},"unit":${JSON.stringify(p.unit)}}`,
      );
    }
    csv += `${n},${p.time},${p.value === null ? '' : p.value}\n`;
  }
  return { series, pointsCsv: csv, refused };
}
