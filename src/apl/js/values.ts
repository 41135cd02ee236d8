/**
 * APL values in JavaScript, for expressions evaluated on one event at a time (an agent's `apl` transform),
 * and the conversions between their types, with the meaning the store's SQL gives them
 * (`src/apl/functions/sql.ts`): one meaning per conversion, checked against the store by a shared corpus.
 *
 * A long or a real is a number; a datetime or a timespan is a bigint of nanoseconds (an event's time keeps
 * its nanoseconds); a bool a boolean; a string a string; a dynamic value what JSON.parse gives. Null is null.
 */
import { formatRfc3339Nano, parseRfc3339Ns } from '../../util/time.js';
import type { AplType } from '../types.js';

export type Value = unknown;

const LONG_TEXT = /^[+-]?[0-9]+$/;

/** A real as APL prints it (Go's shortest form): 1.5, 3, NaN, +Inf. */
function realText(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? '+Inf' : '-Inf';
  return String(x);
}

/** Go's time.Duration.String() of ns: 0s, 1.5µs, 300ms, 1m20s, 2h0m0s. */
export function goDuration(d: bigint): string {
  if (d < 0n) return `-${goDuration(-d)}`;
  const frac = (n: bigint, unit: bigint, digits: number) =>
    `${n / unit}${n % unit === 0n ? '' : `.${(n % unit).toString().padStart(digits, '0').replace(/0+$/, '')}`}`;
  if (d === 0n) return '0s';
  if (d < 1000n) return `${d}ns`;
  if (d < 1_000_000n) return `${frac(d, 1000n, 3)}µs`;
  if (d < 1_000_000_000n) return `${frac(d, 1_000_000n, 6)}ms`;
  const h = d / 3_600_000_000_000n;
  const m = (d / 60_000_000_000n) % 60n;
  return `${h > 0n ? `${h}h` : ''}${d >= 60_000_000_000n ? `${m}m` : ''}${frac(d % 60_000_000_000n, 1_000_000_000n, 9)}s`;
}

const GO_DURATION = /^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const GO_DURATION_PART = /([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)/g;
const GO_UNITS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, μs: 1e3, ms: 1e6, s: 1e9, m: 6e10, h: 3.6e12 };

/** Go's time.ParseDuration: "300ms", "-1.5h", "2h45m"; anything else null. */
export function parseGoDuration(s: string): bigint | null {
  if (s === '0' || s === '+0' || s === '-0') return 0n;
  if (!GO_DURATION.test(s)) return null;
  let sum = 0;
  for (const m of s.matchAll(GO_DURATION_PART)) sum += Number(m[1]) * GO_UNITS[m[2]!]!;
  return BigInt(Math.trunc(s.startsWith('-') ? -sum : sum));
}

/** A string as a datetime: RFC 3339 / ISO 8601, or epoch digits with the unit guessed from the magnitude. */
export function parseDatetime(s: string): bigint | null {
  const t = parseRfc3339Ns(s);
  if (t !== null) return t;
  const n = Number(s);
  if (s.trim() === '' || !Number.isFinite(n)) return null;
  const a = Math.abs(n);
  const scale = a < 1e11 ? 1e9 : a < 1e14 ? 1e6 : a < 1e17 ? 1e3 : 1;
  return BigInt(Math.trunc(n * scale));
}

/** What a dynamic value's text is (json_extract_string): a string itself, anything else its JSON. */
function dynamicText(v: Value): string | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function toStringValue(v: Value, from: AplType): string | null {
  if (v === null || v === undefined) return null;
  switch (from) {
    case 'string':
      return v as string;
    case 'long':
      return String(v);
    case 'real':
      return realText(v as number);
    case 'bool':
      return v ? 'true' : 'false';
    case 'datetime':
      return formatRfc3339Nano(v as bigint);
    case 'timespan':
      return goDuration(v as bigint);
    case 'dynamic':
      return dynamicText(v);
  }
}

export function toLongValue(v: Value, from: AplType): number | null {
  if (v === null || v === undefined) return null;
  switch (from) {
    case 'long':
      return v as number;
    case 'timespan':
    case 'datetime':
      return Number(v as bigint);
    case 'real': {
      const x = Math.trunc(v as number);
      return Number.isFinite(x) ? x : null;
    }
    case 'bool':
      return v ? 1 : 0;
    case 'string':
      return LONG_TEXT.test(v as string) ? Number(v) : null;
    case 'dynamic': {
      if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : null;
      const s = dynamicText(v);
      return s !== null && LONG_TEXT.test(s) ? Number(s) : null;
    }
  }
}

/** A string as DuckDB reads a DOUBLE (TRY_CAST): decimal and exponent forms, inf and nan; else null. */
function parseReal(s: string): number | null {
  const t = s.trim();
  if (/^[+-]?(?:inf|infinity)$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  if (!/^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(t)) return null;
  return Number(t);
}

export function toRealValue(v: Value, from: AplType): number | null {
  if (v === null || v === undefined) return null;
  switch (from) {
    case 'real':
    case 'long':
      return v as number;
    case 'timespan':
    case 'datetime':
      return Number(v as bigint);
    case 'bool':
      return v ? 1 : 0;
    case 'string':
      return parseReal(v as string);
    case 'dynamic': {
      if (typeof v === 'number') return v;
      const s = dynamicText(v);
      return s === null ? null : parseReal(s);
    }
  }
}

const TRUE_TEXT = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_TEXT = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

export function toBoolValue(v: Value, from: AplType): boolean | null {
  if (v === null || v === undefined) return null;
  switch (from) {
    case 'bool':
      return v as boolean;
    case 'long':
    case 'real':
      return v !== 0;
    case 'timespan':
    case 'datetime':
      return v !== 0n;
    case 'string':
      return TRUE_TEXT.has(v as string) ? true : FALSE_TEXT.has(v as string) ? false : null;
    case 'dynamic': {
      const s = dynamicText(v);
      return s === 'true' ? true : s === 'false' ? false : null;
    }
  }
}

/** A datetime or a timespan (ns) from another type: numbers are ns, text is parsed; other types null. */
function toNanos(v: Value, from: AplType, self: AplType, parse: (s: string) => bigint | null): bigint | null {
  if (v === null || v === undefined) return null;
  switch (from) {
    case self:
      return v as bigint;
    case 'long':
      return BigInt(v as number);
    case 'real': {
      const x = Math.trunc(v as number);
      return Number.isFinite(x) ? BigInt(x) : null;
    }
    case 'string':
      return parse(v as string);
    case 'dynamic': {
      const s = dynamicText(v);
      return s === null ? null : parse(s);
    }
    default:
      return null;
  }
}

export const toDatetimeValue = (v: Value, from: AplType) => toNanos(v, from, 'datetime', parseDatetime);
export const toTimespanValue = (v: Value, from: AplType) => toNanos(v, from, 'timespan', parseGoDuration);

/**
 * A value as a dynamic one, which is also how an event's field holds it (JSON): datetimes and timespans as
 * their text, as the store's to_json and tostring() write them; a real JSON cannot hold (NaN, ±Inf) null.
 */
export function toDynamicValue(v: Value, from: AplType): Value {
  if (v === null || v === undefined) return null;
  if (from === 'datetime') return formatRfc3339Nano(v as bigint);
  if (from === 'timespan') return goDuration(v as bigint);
  if (from === 'real' && !Number.isFinite(v as number)) return null;
  return v;
}

/**
 * The type an event's field has by its value, as the store would infer its column's: a whole number a
 * long, another number a real, a string a string, a boolean a bool; arrays and objects stay dynamic.
 */
export function typeOfValue(v: Value): AplType {
  switch (typeof v) {
    case 'number':
      return Number.isInteger(v) ? 'long' : 'real';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    default:
      return 'dynamic';
  }
}

/** Converts a value between types (the binder's implicit conversions, and tostring(), toint()…). */
export function convertValue(v: Value, from: AplType, to: AplType): Value {
  if (from === to) return v ?? null;
  // A dynamic scalar converts as the type its value has (`d > 1s` with d a number of ns, as a long field).
  if (from === 'dynamic' && v !== null && typeof v !== 'object') {
    const own = typeOfValue(v);
    if (own !== 'dynamic') return own === to ? v : convertValue(v, own, to);
  }
  switch (to) {
    case 'string':
      return toStringValue(v, from);
    case 'long':
      return toLongValue(v, from);
    case 'real':
      return toRealValue(v, from);
    case 'bool':
      return toBoolValue(v, from);
    case 'datetime':
      return toDatetimeValue(v, from);
    case 'timespan':
      return toTimespanValue(v, from);
    case 'dynamic':
      return toDynamicValue(v, from);
  }
}

/** A converter between two types, chosen once (the identity where they are the same). */
export function converter(from: AplType, to: AplType): (v: Value) => Value {
  if (from === to) return (v) => v ?? null;
  // An event's field mostly holds the type it is read as already: that one test, before the general way.
  if (from === 'dynamic') {
    switch (to) {
      case 'real':
        return (v) => (typeof v === 'number' ? v : convertValue(v, from, to));
      case 'long':
        return (v) => (typeof v === 'number' && Number.isInteger(v) ? v : convertValue(v, from, to));
      case 'string':
        return (v) => (typeof v === 'string' ? v : convertValue(v, from, to));
      case 'bool':
        return (v) => (typeof v === 'boolean' ? v : convertValue(v, from, to));
      case 'datetime':
      case 'timespan':
      case 'dynamic':
        break;
    }
  }
  return (v) => convertValue(v, from, to);
}
