/**
 * APL's scalar functions in JavaScript, for event pipelines (./compile.ts): each means what its SQL in the
 * catalog (../functions/) means, argument conversions and null rules included. The binder has already
 * checked the arguments and typed the call; an entry here builds the closure once per call site.
 */
import { createHash } from 'node:crypto';
import { unify } from '../functions/define.js';
import type { AplType } from '../types.js';
import type { Ev } from './compile.js';
import { fixed, floorMod, real1, text1, utc, type Call, type Compiler, type JsFunction } from './function-kit.js';

export type { Compiler, JsFunction };
import { COLLECTION_JS_FUNCTIONS } from './collection-functions.js';
import { IP_JS_FUNCTIONS } from './ip-functions.js';
import { GENAI_JS_FUNCTIONS } from './genai-functions.js';
import { NUMBER_JS_FUNCTIONS } from './number-functions.js';
import { SERIES_JS_FUNCTIONS } from './series-functions.js';
import { TEXT_JS_FUNCTIONS } from './text-functions.js';
import { regexOf, regex } from './regex.js';
import { TIME_JS_FUNCTIONS } from './time-functions.js';
import { convertValue, toBoolValue, toStringValue, typeOfValue, type Value } from './values.js';

/** A conversion: tostring() is "" for null; the others keep null. */
function conversion(to: AplType): JsFunction {
  return ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const from = a!.type;
    if (to === 'string') return (row) => toStringValue(f(row), from) ?? '';
    return (row) => convertValue(f(row), from, to);
  };
}

/** Characters as DuckDB counts them (code points), not UTF-16 units. */
const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

export const JS_FUNCTIONS: Record<string, JsFunction> = {
  tostring: conversion('string'),
  toint: conversion('long'),
  tolong: conversion('long'),
  toreal: conversion('real'),
  todouble: conversion('real'),
  tobool: conversion('bool'),
  toboolean: conversion('bool'),
  todatetime: conversion('datetime'),
  totimespan: conversion('timespan'),
  iff: ({ args: [p, a, b] }, c) => {
    const t = unify([a!.type, b!.type], 'iff()');
    const test = c.as(p!, 'bool');
    const x = c.as(a!, t);
    const y = c.as(b!, t);
    return (row) => (test(row) === true ? x(row) : y(row));
  },
  case: ({ args }, c) => {
    const t = unify(
      args.filter((_, i) => i % 2 === 1 || i === args.length - 1).map((x) => x.type),
      'case()',
    );
    const tests: Ev[] = [];
    const values: Ev[] = [];
    for (let i = 0; i + 1 < args.length; i += 2) {
      tests.push(c.as(args[i]!, 'bool'));
      values.push(c.as(args[i + 1]!, t));
    }
    const otherwise = c.as(args[args.length - 1]!, t);
    return (row) => {
      for (let i = 0; i < tests.length; i++) if (tests[i]!(row) === true) return values[i]!(row);
      return otherwise(row);
    };
  },
  coalesce: ({ args }, c) => {
    const t = unify(
      args.map((x) => x.type),
      'coalesce()',
    );
    const parts = args.map((x) => c.as(x, t));
    // For strings the first non-empty value wins (apl.md 4.1); a field holding a string is a string.
    const textual = t === 'string' || t === 'dynamic';
    return (row) => {
      for (let i = 0; i < parts.length; i++) {
        const v = parts[i]!(row);
        if (v !== null && (!textual || v !== '' || i === parts.length - 1)) return v;
      }
      return null;
    };
  },
  isnull: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    return (row) => f(row) === null;
  },
  isnotnull: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    return (row) => f(row) !== null;
  },
  // An event's field holding a string is a string (the store infers the field's type from its values).
  isempty: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    return (row) => {
      const v = f(row);
      return v === null || v === '';
    };
  },
  isnotempty: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    return (row) => {
      const v = f(row);
      return v !== null && v !== '';
    };
  },
  strlen: text1(codePoints),
  tolower: text1((s) => s.toLowerCase()),
  toupper: text1((s) => s.toUpperCase()),
  strcat: ({ args }, c) => {
    const parts = args.map((a) => {
      const f = c.compile(a);
      return (row: Readonly<Record<string, unknown>>) => toStringValue(f(row), a.type) ?? '';
    });
    return (row) => {
      let s = '';
      for (const p of parts) s += p(row);
      return s;
    };
  },
  strcat_delim: ({ args: [d, ...rest] }, c) => {
    const delim = c.compile(d!);
    const parts = rest.map((a) => {
      const f = c.compile(a);
      return (row: Readonly<Record<string, unknown>>) => toStringValue(f(row), a.type) ?? '';
    });
    return (row) => {
      const sep = toStringValue(delim(row), d!.type) ?? '';
      return parts.map((p) => p(row)).join(sep);
    };
  },
  substring: ({ args: [s, start, len] }, c) => {
    const str = c.text(s!);
    const from = c.as(start!, 'long');
    const count = len ? c.as(len, 'long') : undefined;
    return (row) => {
      const v = str(row);
      const f = from(row) as number | null;
      const n = count ? (count(row) as number | null) : undefined;
      if (v === null || f === null || n === null) return '';
      const chars = [...v];
      const at = Math.max(f, 0);
      return chars.slice(at, n === undefined ? undefined : at + Math.max(n, 0)).join('');
    };
  },
  replace_string: ({ args: [l, r, s] }, c) => {
    const [find, by, text] = [c.as(l!, 'string'), c.as(r!, 'string'), c.as(s!, 'string')];
    return (row) => {
      const v = text(row) as string | null;
      const f = find(row) as string | null;
      const b = by(row) as string | null;
      if (v === null || f === null || b === null) return null;
      return f === '' ? v : v.split(f).join(b);
    };
  },
  trim_space: text1((s) => s.trim()),
  not: fixed(['bool'], (b: boolean) => !b),
  'valid#': ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const t = a!.type;
    return (row) => {
      const v = f(row);
      if (v === null) return false;
      if (t === 'string') return v !== '';
      if (t === 'dynamic') {
        if (Array.isArray(v)) return v.length > 0;
        if (typeof v === 'object') return Object.keys(v).length > 0;
        if (typeof v === 'string') return v !== '';
      }
      return toBoolValue(v, t) === true;
    };
  },
  now: ({ args: [now, off] }, c) => {
    const n = c.compile(now!);
    const o = off ? c.as(off, 'timespan') : undefined;
    return (row) => {
      const t = n(row) as bigint;
      if (!o) return t;
      const d = o(row) as bigint | null;
      return d === null ? null : t + d;
    };
  },
  ago: ({ args: [now, off] }, c) => {
    const n = c.compile(now!);
    const o = c.as(off!, 'timespan');
    return (row) => {
      const d = o(row) as bigint | null;
      return d === null ? null : (n(row) as bigint) - d;
    };
  },
};
JS_FUNCTIONS.iif = JS_FUNCTIONS.iff!;
Object.assign(
  JS_FUNCTIONS,
  IP_JS_FUNCTIONS,
  TIME_JS_FUNCTIONS,
  COLLECTION_JS_FUNCTIONS,
  TEXT_JS_FUNCTIONS,
  NUMBER_JS_FUNCTIONS,
  SERIES_JS_FUNCTIONS,
  GENAI_JS_FUNCTIONS,
);

/** Why the few functions with no meaning for one event at a time are refused where a pipeline loads. */
export const REFUSED_IN_PIPELINES: Record<string, string> = {
  geo_info_from_ip_address:
    'geo_info_from_ip_address() reads a GeoIP database of about 100 MB, which the agent does not load; look addresses up in queries, where it runs',
  bin_auto: "bin_auto() takes its bin size from a query's time range, which an event has not; use bin(_time, 1m)",
};

/** APL's bin(): values rounded down to a multiple of the size (datetimes from 0001-01-01, as the store). */
const bin: JsFunction = ({ args: [v, size] }, c) => {
  const t = v!.type;
  if (t === 'datetime') {
    const x = c.compile(v!);
    const s = c.as(size!, 'timespan');
    const anchor = -62135596800n * 1_000_000_000n;
    return (row) => {
      const d = x(row) as bigint | null;
      const n = s(row) as bigint | null;
      if (d === null || n === null || n <= 0n) return null;
      return d - floorMod(d - floorMod(anchor, n), n);
    };
  }
  if (t === 'long' || t === 'timespan') {
    const x = c.compile(v!);
    const s = c.compile(size!);
    const big = (n: unknown) => (typeof n === 'bigint' ? n : BigInt(Math.trunc(n as number)));
    return (row) => {
      const a = x(row);
      const n = s(row);
      if (a === null || n === null) return null;
      const [p, q] = [big(a), big(n)];
      if (q <= 0n) return null;
      const r = p - floorMod(p, q);
      return t === 'long' ? Number(r) : r;
    };
  }
  const x = c.as(v!, 'real');
  const s = c.as(size!, 'real');
  return (row) => {
    const a = x(row) as number | null;
    const n = s(row) as number | null;
    return a === null || n === null || !(n > 0) ? null : Math.floor(a / n) * n;
  };
};

/** A datetime's part as DuckDB's date_part gives it. */
function datePart(part: (d: Date, ns: bigint) => number): JsFunction {
  return fixed(['datetime'], (ns: bigint) => part(utc(ns), ns));
}

/**
 * A test of a value's type: a typed argument is of one of `types` (and not null); a dynamic one holds a
 * JSON value `holds` accepts, as the store's json_type says.
 */
function typeTest(types: AplType[], holds: (v: unknown) => boolean): JsFunction {
  return ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const t = a!.type;
    if (t !== 'dynamic' && !types.includes(t)) return () => false;
    return (row) => {
      const v = f(row);
      return v !== null && (t !== 'dynamic' || holds(v));
    };
  };
}

/** A %XX that is no escape stays as it is, as DuckDB's url_decode leaves it. */
function urlDecode(s: string): string {
  const bytes: number[] = [];
  const raw = Buffer.from(s, 'utf8');
  for (let i = 0; i < raw.length; i++) {
    const hex = raw[i] === 0x25 && i + 2 < raw.length ? raw.subarray(i + 1, i + 3).toString('latin1') : '';
    if (hex.length === 2 && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(raw[i]!);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A URL's parts, as the store's parse_url reads them. */
const URL_PARTS =
  /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^:/?#]*)(?::([0-9]+))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/s;

/** A query string's parameters: keys and values decoded, the first of a key repeated kept. */
function queryParams(q: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of q.replace(/^\?/, '').split('&')) {
    if (kv === '') continue;
    const eq = kv.indexOf('=');
    const k = urlDecode(eq < 0 ? kv : kv.slice(0, eq));
    if (Object.hasOwn(out, k)) continue;
    const v = urlDecode(eq < 0 ? '' : kv.slice(eq + 1));
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

/** A digest of a string's UTF-8, in lower-case hex. */
const digest = (algorithm: string) => text1((s) => createHash(algorithm).update(s).digest('hex'));

Object.assign(JS_FUNCTIONS, {
  abs: ({ args: [a] }, c) => {
    const t = a!.type;
    const f = t === 'long' || t === 'timespan' || t === 'real' ? c.compile(a!) : c.as(a!, 'real');
    return (row) => {
      const v = f(row);
      if (v === null) return null;
      return typeof v === 'bigint' ? (v < 0n ? -v : v) : Math.abs(v as number);
    };
  },
  sqrt: real1(Math.sqrt, (x) => x >= 0),
  sin: real1(Math.sin),
  cos: real1(Math.cos),
  tan: real1(Math.tan),
  atan: real1(Math.atan),
  asin: real1(Math.asin, (x) => x >= -1 && x <= 1),
  acos: real1(Math.acos, (x) => x >= -1 && x <= 1),
  atan2: fixed(['real', 'real'], (y: number, x: number) => Math.atan2(y, x)),
  degrees: real1((x) => x * (180 / Math.PI)),
  radians: real1((x) => x * (Math.PI / 180)),
  exp2: real1((x) => 2 ** x),
  exp10: real1((x) => 10 ** x),
  pi: () => () => Math.PI,
  pow: fixed(['real', 'real'], (x: number, y: number) => x ** y),
  log: real1(Math.log, (x) => x > 0),
  log10: real1(Math.log10, (x) => x > 0),
  log2: real1(Math.log2, (x) => x > 0),
  exp: real1(Math.exp),
  isnan: fixed(['real'], (x: number) => Number.isNaN(x)),
  isinf: fixed(['real'], (x: number) => x === Infinity || x === -Infinity),
  isfinite: fixed(['real'], (x: number) => Number.isFinite(x)),
  sign: real1(Math.sign),
  floor: ({ args: [v, size], ...rest }, c) => {
    if (size) return bin({ ...rest, args: [v!, size] }, c);
    if (v!.type === 'long') return c.compile(v!);
    return real1(Math.floor)({ ...rest, args: [v!] }, c);
  },
  ceiling: ({ args: [v], ...rest }, c) =>
    v!.type === 'long' ? c.compile(v!) : real1(Math.ceil)({ ...rest, args: [v!] }, c),
  bin,
  round: ({ args: [v, places] }, c) => {
    if (v!.type === 'long' && !places) return c.compile(v!);
    const x = c.as(v!, 'real');
    const p = places ? c.as(places, 'long') : () => 0;
    return (row) => {
      const a = x(row) as number | null;
      const n = p(row) as number | null;
      if (a === null || n === null) return null;
      // Half away from zero, as DuckDB rounds.
      const m = 10 ** n;
      const r = (Math.sign(a) * Math.round(Math.abs(a) * m)) / m;
      return Object.is(r, -0) ? 0 : r;
    };
  },
  reverse: text1((s) => [...s].reverse().join('')),
  hash_md5: digest('md5'),
  hash_sha1: digest('sha1'),
  hash_sha256: digest('sha256'),
  hourofday: datePart((d) => d.getUTCHours()),
  dayofmonth: datePart((d) => d.getUTCDate()),
  getmonth: datePart((d) => d.getUTCMonth() + 1),
  monthofyear: datePart((d) => d.getUTCMonth() + 1),
  getyear: datePart((d) => d.getUTCFullYear()),
  dayofweek: datePart((d) => d.getUTCDay()),
  gettype: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const t = a!.type;
    return (row) => {
      const v = f(row);
      if (v === null) return 'null';
      if (t !== 'dynamic') return t;
      if (Array.isArray(v)) return 'array';
      const own = typeOfValue(v);
      return own === 'dynamic' ? 'dictionary' : own;
    };
  },
  array_length: ({ args: [a] }, c) => {
    const f = c.as(a!, 'dynamic');
    return (row) => {
      const v = f(row);
      return Array.isArray(v) ? v.length : null;
    };
  },
  bag_keys: ({ args: [a] }, c) => {
    const f = c.as(a!, 'dynamic');
    return (row) => {
      const v = f(row);
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : null;
    };
  },
  parse_json: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    if (a!.type !== 'string') return c.as(a!, 'dynamic');
    return (row) => {
      const s = f(row) as string | null;
      if (s === null) return null;
      try {
        return JSON.parse(s) as Value;
      } catch {
        // Not JSON: the string itself (apl.md 4.2).
        return s;
      }
    };
  },
} satisfies Record<string, JsFunction>);

/** The longest string a function makes from an event's values (strrep): beyond it, the call fails (null). */
const MAX_MADE_CHARS = 1 << 20;

/** Characters (code points) of a string. */
const chars = (s: string) => [...s];

/** DuckDB's trim(s, characters): any of the characters, from either end. */
function trimChars(s: string, cut: string, start: boolean, end: boolean): string {
  const set = new Set(chars(cut));
  const cs = chars(s);
  let a = 0;
  let b = cs.length;
  while (start && a < b && set.has(cs[a]!)) a++;
  while (end && b > a && set.has(cs[b - 1]!)) b--;
  return cs.slice(a, b).join('');
}

/** The greatest or least of values of one type; null when any is (DuckDB's GREATEST skips nulls). */
function extreme(name: string, pick: (c: number) => boolean): JsFunction {
  return ({ args }, c) => {
    const t = unify(
      args.map((x) => x.type),
      `${name}()`,
    );
    const parts = args.map((x) => c.as(x, t));
    return (row) => {
      let best: Value = null;
      for (const p of parts) {
        const v = p(row);
        if (v === null) continue;
        if (best === null || pick((v as number) < (best as number) ? -1 : (v as number) > (best as number) ? 1 : 0))
          best = v;
      }
      return best;
    };
  };
}

/** n units since the epoch as a datetime (whole numbers exactly, others rounded to the nanosecond). */
function epochTo(nsPerUnit: number): JsFunction {
  return ({ args: [n] }, c) => {
    if (n!.type === 'long') {
      const f = c.compile(n!);
      return (row) => {
        const v = f(row) as number | null;
        return v === null ? null : BigInt(v) * BigInt(nsPerUnit);
      };
    }
    const f = c.as(n!, 'real');
    return (row) => {
      const v = f(row) as number | null;
      return v === null || !Number.isFinite(v) ? null : BigInt(Math.round(v * nsPerUnit));
    };
  };
}

Object.assign(JS_FUNCTIONS, {
  // A parse pattern's capture group: null where the pattern does not match, '' for a group that took no part.
  'parse_capture#': ({ args: [s, re, g] }, c) => {
    const text = c.text(s!);
    const pattern = regexOf((re as { value: string }).value);
    const group = Number((g as { value: bigint }).value);
    return (row) => {
      const v = text(row);
      if (v === null) return null;
      const m = pattern.matcher(v);
      return m.find() ? (m.group(group) ?? '') : null;
    };
  },
  // parse-kv's value of one key: the first group, or the second when the first (quoted) did not take part.
  'parse_kv#': ({ args: [s, re, quoted] }, c) => {
    const text = c.text(s!);
    const pattern = regexOf((re as { value: string }).value);
    const hasQuote = (quoted as { value: boolean }).value;
    return (row) => {
      const v = text(row);
      if (v === null) return null;
      const m = pattern.matcher(v);
      if (!m.find()) return null;
      const first = m.group(1) ?? '';
      return hasQuote && first === '' ? (m.group(2) ?? '') : first;
    };
  },
  // Everything but letters, digits and -_.~ percent-encoded, as DuckDB's url_encode.
  url_encode: text1((s) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
  ),
  url_decode: text1(urlDecode),
  parse_urlquery: text1(queryParams),
  parse_url: text1((s) => {
    const m = URL_PARTS.exec(s);
    if (!m) return null;
    const g = (i: number) => m[i] ?? '';
    return {
      Scheme: g(1),
      Host: g(4),
      Port: g(5),
      Path: g(6),
      Username: g(2),
      Password: g(3),
      'Query Parameters': queryParams(g(7)),
      Fragment: g(8),
    };
  }),
  extract_all: ({ args }, c) => {
    const [re, groups, text] = args.length === 3 ? args : [args[0], undefined, args[1]];
    if (re!.k !== 'lit' || typeof re!.value !== 'string')
      throw new Error(
        'extract_all() in an event pipeline takes a constant pattern (it is compiled once, where the pipeline loads)',
      );
    const patternText = re!.value;
    const pattern = regexOf(patternText);
    const n = (patternText.match(/\((?!\?)/g) ?? []).length + (patternText.match(/\(\?P?</g) ?? []).length;
    const wanted = groups
      ? ((groups as { value: unknown }).value as unknown[]).map((g) => Number(g))
      : Array.from({ length: n }, (_, i) => i + 1);
    const s = c.text(text!);
    return (row) => {
      const v = s(row);
      if (v === null) return null;
      const out: unknown[] = [];
      const m = pattern.matcher(v);
      while (m.find()) {
        const whole = m.group(0) ?? '';
        if (wanted.length <= 1) out.push(m.group(wanted[0] ?? 0) ?? '');
        else {
          // Each group read again from the match's own text, as the store's regexp_extract does.
          const inner = pattern.matcher(whole);
          const found = inner.find();
          out.push(wanted.map((g) => (found ? (inner.group(g) ?? '') : '')));
        }
        if (out.length > MAX_MADE_CHARS) throw new RangeError('extract_all would make more than a million matches');
      }
      return out;
    };
  },
  base64_decode_tostring: text1((s) => {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return null;
    const bytes = Buffer.from(s, 'base64');
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    try {
      return text.decode(bytes);
    } catch {
      return null;
    }
  }),
  hash_sha512: digest('sha512'),
  string_size: text1((s) => Buffer.byteLength(s)),
  isreal: typeTest(['real', 'long'], (v) => typeof v === 'number' || typeof v === 'bigint'),
  isbool: typeTest(['bool'], (v) => typeof v === 'boolean'),
  ismap: typeTest([], (v) => v !== null && typeof v === 'object' && !Array.isArray(v)),
  isarray: typeTest([], (v) => Array.isArray(v)),
  // The first character upper-cased as one character (ß is ẞ; a ligature with no single capital stays).
  totitle: text1((s) => {
    const [first, ...rest] = s;
    if (first === undefined) return '';
    const up = first === 'ß' ? 'ẞ' : first.toUpperCase();
    return ([...up].length === 1 ? up : first) + rest.join('');
  }),
  extract: ({ args: [re, group, s] }, c) => {
    const [pattern, g, text] = [c.text(re!), c.as(group!, 'long'), c.text(s!)];
    return (row) => {
      const v = text(row);
      const p = pattern(row);
      const n = g(row) as number | null;
      if (v === null || p === null || n === null) return null;
      const m = regex(p)?.matcher(v);
      const out = m?.find() ? (m.group(n) ?? '') : '';
      return out === '' ? null : out;
    };
  },
  replace_regex: fixed(['string', 'string', 'string'], (re: string, rewrite: string, s: string) => {
    const r = regex(re);
    if (!r) return s;
    // $1 is a group (as DuckDB's rewrite \1); any other $ is itself.
    return r
      .matcher(s)
      .replaceAll((match: string, ...rest: unknown[]) =>
        rewrite.replace(/\$(\d)/g, (_, d: string) =>
          d === '0' ? match : ((rest[Number(d) - 1] as string | null) ?? ''),
        ),
      );
  }),
  split: fixed(['string', 'string'], (s: string, d: string) => (d === '' ? (s === '' ? [''] : chars(s)) : s.split(d))),
  trim: fixed(['string', 'string'], (cut: string, s: string) => trimChars(s, cut, true, true)),
  trim_start: fixed(['string', 'string'], (cut: string, s: string) => trimChars(s, cut, true, false)),
  trim_end: fixed(['string', 'string'], (cut: string, s: string) => trimChars(s, cut, false, true)),
  countof: fixed(['string', 'string'], (l: string, s: string) => {
    const removed = l === '' ? chars(s).length : chars(s.split(l).join('')).length;
    return Math.trunc((chars(s).length - removed) / Math.max(chars(l).length, 1));
  }),
  strrep: ({ args: [s, n, d] }, c) => {
    const [text, count, delim] = [c.as(s!, 'string'), c.as(n!, 'long'), d ? c.as(d, 'string') : () => ''];
    return (row) => {
      const v = text(row) as string | null;
      const k = count(row) as number | null;
      const sep = delim(row) as string | null;
      if (v === null || k === null || sep === null) return null;
      if (k < 1) return '';
      const n = Math.min(k, 1024);
      if (n * (v.length + sep.length) > MAX_MADE_CHARS)
        throw new RangeError(`strrep would make more than ${MAX_MADE_CHARS} characters`);
      return Array<string>(n).fill(v).join(sep);
    };
  },
  base64_encode_tostring: text1((s) => Buffer.from(s, 'utf8').toString('base64')),
  strcmp: fixed(['string', 'string'], (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)),
  max_of: extreme('max_of', (c) => c > 0),
  min_of: extreme('min_of', (c) => c < 0),
  unixtime_seconds_todatetime: epochTo(1_000_000_000),
  unixtime_milliseconds_todatetime: epochTo(1_000_000),
  unixtime_microseconds_todatetime: epochTo(1_000),
  unixtime_nanoseconds_todatetime: fixed(['long'], (n: number) => BigInt(n)),
  todynamic: ({ args: [a] }, c) =>
    a!.type === 'string' ? JS_FUNCTIONS.parse_json!({ args: [a!] } as Call, c) : c.as(a!, 'dynamic'),
  isstring: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const t = a!.type;
    return (row) => {
      const v = f(row);
      return t === 'string' || t === 'dynamic' ? typeof v === 'string' : false;
    };
  },
} satisfies Record<string, JsFunction>);
JS_FUNCTIONS.replace = JS_FUNCTIONS.replace_regex!;
