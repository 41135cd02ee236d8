/**
 * String functions of event pipelines beyond the core ones in ./functions.ts, meaning what
 * ../functions/strings.ts's SQL means: positions and counts by regular expression, regex trims and quoting,
 * translation, JSON quoting, ANSI escapes, code points, paths, CSV, Base64 to and from bytes, canonical
 * JSON, URLs from their parts, pairs and the checksum tests. Positions count characters (code points), from
 * 0, as DuckDB's do.
 */
import type { RE2JS } from 're2js';
import { csvFields, sortedJson } from '../functions/text-values.js';
import { bigintList, fixed, text1, type JsFunction } from './function-kit.js';
import { regex } from './regex.js';
import type { Value } from './values.js';

type Row = Readonly<Record<string, unknown>>;

const chars = (s: string) => [...s];
const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** The characters s[start, start + length) (length -1: to the end), as DuckDB's substring takes them. */
const window = (cs: string[], start: number, length: number) =>
  cs.slice(start, length === -1 ? undefined : start + length).join('');

/** Optional long arguments: their closures, or a constant default. */
const longArg = (c: Parameters<JsFunction>[1], e: Parameters<JsFunction>[0]['args'][number] | undefined, d: number) =>
  e ? (c.as(e, 'long') as (row: Row) => number | null) : () => d;

const indexof: JsFunction = ({ args: [s, l, st, len, occ] }, c) => {
  const [text, look] = [c.text(s!), c.text(l!)];
  const [start0, length0, nth] = [longArg(c, st, 0), longArg(c, len, -1), longArg(c, occ, 1)];
  return (row) => {
    const src = text(row);
    const lookup = look(row);
    if (src === null || lookup === null) return null;
    const cs = chars(src);
    const raw = start0(row);
    const start = raw === null ? null : raw < 0 ? Math.max(cs.length + raw, 0) : raw;
    const length = length0(row);
    const n = nth(row);
    if ((length !== null && length < -1) || (n !== null && n < 1)) return null;
    if (start !== null && start > cs.length) return -1;
    if (lookup === '') return start;
    if (start === null || length === null || n === null) return -1;
    const pieces = window(cs, start, length).split(lookup);
    if (pieces.length - 1 < n) return -1;
    let at = start + (n - 1) * codePoints(lookup);
    for (let i = 0; i < n; i++) at += codePoints(pieces[i]!);
    return at;
  };
};

/** The matches of a pattern in a text, as DuckDB's regexp_extract_all finds them: [start, end) in UTF-16 units. */
function matchSpans(re: RE2JS, s: string, limit = Infinity): [number, number][] {
  const out: [number, number][] = [];
  const m = re.matcher(s);
  while (out.length < limit && m.find()) out.push([m.start(), m.end()]);
  return out;
}

const indexofRegex: JsFunction = ({ args: [s, p, st, occ, len] }, c) => {
  const [text, pattern] = [c.text(s!), c.text(p!)];
  const [start0, nth, length0] = [longArg(c, st, 0), longArg(c, occ, 1), longArg(c, len, -1)];
  return (row) => {
    const src = text(row);
    const start = start0(row);
    const n = nth(row);
    const length = length0(row);
    if (src === null || start === null || n === null || length === null) return null;
    if (start < 0 || n < 1 || length < -1) return null;
    const cs = chars(src);
    if (start > cs.length) return -1;
    const pat = pattern(row);
    const re = pat === null ? null : regex(pat);
    if (!re) return null;
    const w = window(cs, start, length);
    const spans = matchSpans(re, w, n);
    return spans.length < n ? -1 : start + codePoints(w.slice(0, spans[n - 1]![0]));
  };
};

/** regexp_replace(s, pattern, '') of the first match only. */
function removeFirst(pattern: string, s: string): string | null {
  const re = regex(pattern);
  if (!re) return null;
  const m = re.matcher(s);
  return m.find() ? s.slice(0, m.start()) + s.slice(m.end()) : s;
}

function trimRegex(start: boolean, end: boolean): JsFunction {
  return fixed(['string', 'string'], (re: string, s: string) => {
    let out: string | null = s;
    if (start) out = removeFirst(`^(?:${re})+`, out);
    if (end && out !== null) out = removeFirst(`(?:${re})+$`, out);
    return out;
  });
}

/** DuckDB's to_json of a string: quotes, backslashes and control characters escaped. */
const jsonQuote = (s: string) => JSON.stringify(s);

const PATH = /^(?:([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/:?#]*)(?::([0-9]+))?)?([^?#]*)(\?[^#]*)?/s;

function parsePath(s: string): Value {
  const m = PATH.exec(s)!;
  const g = (i: number) => m[i] ?? '';
  const path = g(4);
  const base = /[^/\\]*$/.exec(path)![0];
  const dir = path.slice(0, path.length - base.length);
  return {
    scheme: g(1),
    host: g(2),
    port: g(3),
    directory: codePoints(dir) > 1 ? dir.replace(/[/\\]+$/, '') : dir,
    basename: base,
    extension: /\.([^.]*)$/.exec(base)?.[1] ?? '',
    query: g(5),
  };
}

/** Base64 text's bytes, as DuckDB's from_base64 reads it, or null when it is not Base64. */
function base64Bytes(s: string): Buffer | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return null;
  return Buffer.from(s, 'base64');
}

/** A value's text as json_extract_string gives it: a string as it is, anything else its JSON. */
const jsonText = (v: unknown) => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));

/** Everything but letters, digits and -_.~ percent-encoded, as DuckDB's url_encode. */
const urlEncode = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);

function formatUrl(d: unknown): string | null {
  if (d === null || typeof d !== 'object' || Array.isArray(d)) return null;
  const bag = d as Record<string, unknown>;
  const part = (...keys: string[]) => {
    for (const k of keys) {
      const t = Object.hasOwn(bag, k) ? jsonText(bag[k]) : null;
      if (t !== null) return t;
    }
    return '';
  };
  const q = Object.hasOwn(bag, 'query') && bag.query !== null ? bag.query : bag['Query Parameters'];
  let params = '';
  if (q !== null && typeof q === 'object' && !Array.isArray(q))
    params = Object.entries(q as Record<string, unknown>)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => `${urlEncode(k)}=${urlEncode(jsonText(v)!)}`)
      .join('&');
  else if (q !== undefined) params = jsonText(q) ?? '';
  const [scheme, user, password, port, path, fragment] = [
    part('scheme', 'Scheme'),
    part('user', 'Username'),
    part('password', 'Password'),
    part('port', 'Port'),
    part('path', 'Path'),
    part('fragment', 'Fragment'),
  ];
  const auth = user !== '' ? `${user}${password !== '' ? `:${password}` : ''}@` : '';
  return (
    (scheme !== '' ? `${scheme}://` : '') +
    auth +
    part('host', 'Host') +
    (port !== '' ? `:${port}` : '') +
    (path !== '' && !path.startsWith('/') ? '/' : '') +
    path +
    (params !== '' ? `?${params.replace(/^\?/, '')}` : '') +
    (fragment !== '' ? `#${fragment}` : '')
  );
}

/** A pair text split at its first separator: {key, value, separator}; null without one. */
function pairOf(s: string, sep: string): Value {
  const at = sep === '' ? -1 : s.indexOf(sep);
  return at < 0 ? null : { key: s.slice(0, at), value: s.slice(at + sep.length), separator: sep };
}

/** A `*` wildcard pattern as a whole-text test (LIKE with every other character literal). */
function wildcard(p: string): (s: string) => boolean {
  const re = new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 's');
  return (s) => re.test(s);
}

/** Luhn's checksum over the digits of s (spaces and dashes dropped), when there are min to max of them. */
function luhn(min: number, max: number): JsFunction {
  return fixed(['string'], (s: string) => {
    const d = [...s.replace(/[ -]/g, '')].reverse();
    if (d.length < min || d.length > max || d.some((x) => x < '0' || x > '9')) return false;
    let sum = 0;
    d.forEach((x, i) => {
      const n = Number(x) * (i % 2 === 1 ? 2 : 1);
      sum += n > 9 ? n - 9 : n;
    });
    return sum % 10 === 0;
  });
}

const ESCAPED = /[\\.+*?()|[\]{}^$]/g;

export const TEXT_JS_FUNCTIONS: Record<string, JsFunction> = {
  indexof,
  indexof_regex: indexofRegex,
  countof_regex: fixed(['string', 'string'], (p: string, s: string) => {
    const re = regex(p);
    return re ? matchSpans(re, s).length : null;
  }),
  regex_quote: text1((s) => s.replace(ESCAPED, '\\$&')),
  trim_regex: trimRegex(true, true),
  trim_start_regex: trimRegex(true, false),
  trim_end_regex: trimRegex(false, true),
  // A replacement list shorter than the search list repeats its last character; an empty one deletes.
  translate: fixed(['string', 'string', 'string'], (from: string, to: string, s: string) => {
    const [f, t] = [chars(from), chars(to)];
    const map = new Map<string, string>();
    f.forEach((ch, i) => {
      if (!map.has(ch)) map.set(ch, t.length === 0 ? '' : (t[i] ?? t[t.length - 1]!));
    });
    return chars(s)
      .map((ch) => map.get(ch) ?? ch)
      .join('');
  }),
  quote: text1(jsonQuote),
  strip_ansi_escapes: text1((s) =>
    s.replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '').replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g, ''),
  ),
  unicode_codepoints_from_string: text1((s) => chars(s).map((ch) => ch.codePointAt(0)!)),
  unicode_codepoints_to_string: ({ args: [a] }, c) => {
    const f = c.as(a!, 'dynamic');
    return (row) => {
      const l = bigintList(f(row));
      if (l === null) return null;
      let out = '';
      for (const n of l)
        if (n !== null && n >= 1 && n <= 0x10ffff && !(n >= 0xd800 && n <= 0xdfff)) out += String.fromCodePoint(n);
      return out;
    };
  },
  parse_path: text1(parsePath),
  parse_csv: text1((s) => {
    const json = csvFields(s);
    return json === null ? null : (JSON.parse(json) as Value);
  }),
  base64_decode_toarray: text1((s) => {
    const bytes = base64Bytes(s);
    return bytes ? [...bytes] : [];
  }),
  base64_encode_fromarray: ({ args: [a] }, c) => {
    const f = c.as(a!, 'dynamic');
    return (row) => {
      const l = bigintList(f(row));
      if (l === null) return null;
      const bytes = l.filter((n): n is number => n !== null);
      return bytes.every((n) => n >= 0 && n <= 255) ? Buffer.from(bytes).toString('base64') : null;
    };
  },
  dynamic_to_json: ({ args: [a] }, c) => {
    const f = c.as(a!, 'dynamic');
    return (row) => {
      const v = f(row);
      return v === null ? null : sortedJson(JSON.stringify(v));
    };
  },
  format_url: ({ args: [a] }, c) => {
    const f = c.as(a!, 'dynamic');
    return (row) => formatUrl(f(row));
  },
  pair: ({ args: [k, v, sep] }, c) => {
    const [key, value, s] = [c.as(k!, 'string'), c.as(v!, 'string'), sep ? c.as(sep, 'string') : () => ':'];
    return (row) => {
      const parts = [key(row), s(row), value(row)];
      return parts.includes(null) ? null : parts.join('');
    };
  },
  parse_pair: ({ args: [a, sep] }, c) => {
    const [text, s] = [c.text(a!), sep ? c.text(sep) : () => ':'];
    return (row) => {
      const v = text(row);
      const d = s(row);
      return v === null || d === null ? null : pairOf(v, d);
    };
  },
  find_pair: ({ args: [a, kp, vp, sep] }, c) => {
    const list = c.as(a!, 'dynamic');
    const [keys, values, s] = [c.text(kp!), c.text(vp!), sep ? c.text(sep) : () => ':'];
    return (row) => {
      const l = list(row);
      const [k, v, d] = [keys(row), values(row), s(row)];
      if (!Array.isArray(l) || k === null || v === null || d === null) return null;
      const [keyOk, valueOk] = [wildcard(k), wildcard(v)];
      for (const x of l) {
        if (typeof x !== 'string') continue;
        const p = pairOf(x, d) as { key: string; value: string } | null;
        if (p && keyOk(p.key) && valueOk(p.value)) return p;
      }
      return null;
    };
  },
  iscc: luhn(12, 19),
  isimei: luhn(15, 15),
};
