/** The query time range of a request: RFC 3339 or relative to now (`now`, `now-1h`, `now-30m`, `now-7d`, `now-1w`). */
import { parseDatetimeText } from '../../apl/parser/parser.js';
import { TIMESPAN_UNITS, timespanNs } from '../../apl/lexer/lexer.js';
import { clampNs } from '../../util/time.js';

/**
 * Parses a startTime/endTime value; undefined when absent; throws Error with a message naming the field.
 * A time past what nanoseconds hold (9999-12-31, now-10000000d) is the furthest they do: it bounds the
 * same events.
 */
export function parseTimeBound(field: string, value: unknown, nowNs: bigint): bigint | undefined {
  const ns = parseBound(field, value, nowNs);
  return ns === undefined ? undefined : clampNs(ns);
}

function parseBound(field: string, value: unknown, nowNs: bigint): bigint | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Error(`${field} must be a string (RFC 3339, or relative such as now-1h)`);
  const text = value.trim();
  // Go clients send the zero time for "unset".
  if (text.startsWith('0001-01-01T00:00:00')) return undefined;
  const rel = /^now(?:\s*([+-])\s*(\d+(?:\.\d+)?)([a-z]+))?$/i.exec(text);
  if (rel) {
    if (!rel[1]) return nowNs;
    const unit = TIMESPAN_UNITS[rel[3]!.toLowerCase()];
    if (unit === undefined) throw new Error(`${field}: unknown unit "${rel[3]}" in "${text}"`);
    const offset = timespanNs(rel[2]!, unit);
    return rel[1] === '-' ? nowNs - offset : nowNs + offset;
  }
  const ns = parseDatetimeText(text);
  if (ns === null)
    throw new Error(`${field} "${text}" is not a time (use RFC 3339, e.g. 2024-01-01T00:00:00Z, or now-1h)`);
  return ns;
}

/** bin_auto's size: the smallest "nice" step that gives at most 100 buckets over the range. */
export function binAutoSize(rangeNs: bigint): bigint {
  const s = 1_000_000_000n;
  const steps = [
    1n,
    5n,
    10n,
    30n,
    60n,
    300n,
    600n,
    900n,
    1800n,
    3600n,
    10800n,
    21600n,
    43200n,
    86400n,
    604800n,
    2592000n,
  ].map((x) => x * s);
  for (const step of steps) if (rangeNs / step <= 100n) return step;
  return steps[steps.length - 1]!;
}
