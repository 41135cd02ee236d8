/**
 * String functions beyond the core ones in ./scalar.ts: regular-expression counts, positions and trims,
 * quoting, repetition, translation, code points, URL queries and paths, CSV, byte sizes, pairs, and the
 * checksum tests (iscc, isimei). Positions are APL's, from 0.
 */
import type { ScalarFunction } from './catalog.js';
import { castTo, checkConvertible, fixed } from './define.js';
import { withinRowShare } from '../../sql/row-share.js';
import { constantNumber, JSON_QUOTING } from './made-bytes.js';
import { asStringSql, bindSql, toDynamicSql, type SqlArg } from './sql.js';
import { jsonList } from './arrays.js';
import { sqlText } from '../../sql/quote.js';
import { lookupTable } from '../../util/lookup.js';

/** A URL query ("a=1&b=x%20y", with or without "?") as a JSON object; a key seen again keeps its first value. */
export function queryParamsSql(q: string): string {
  const pairs = `list_filter(string_split(regexp_replace(${q}, '^\\?', ''), '&'), kv -> kv <> '')`;
  return bindSql({ p: pairs }, ({ p }) =>
    bindSql({ p: p!, k: `list_transform(${p}, kv -> url_decode(split_part(kv, '=', 1)))` }, (v) => {
      const entries = `list_transform(list_filter(range(1, len(${v.p}) + 1), i -> list_position(${v.k}, ${v.k}[i]) = i), i -> {'k': ${v.k}[i], 'v': url_decode(substr(${v.p}[i], length(split_part(${v.p}[i], '=', 1)) + 2))})`;
      return `COALESCE(to_json(map_from_entries(${entries})), '{}'::JSON)`;
    }),
  );
}

/**
 * The position of the n-th match in s[start:start+length] (length -1: to the end), or -1. `pieces` are the
 * texts between matches and `matches` the matches, so the n-th match starts after n pieces and n-1 matches.
 */
function nthPosition(pieces: string, matches: string, start: string, n: string): string {
  const before = `list_sum(list_transform(list_slice(${pieces}, 1, ${n}), p -> length(p)))`;
  const skipped = `COALESCE(list_sum(list_transform(list_slice(${matches}, 1, ${n} - 1), m -> length(m))), 0)`;
  return `(CASE WHEN len(${matches}) >= ${n} THEN CAST(${start} + ${before} + ${skipped} AS BIGINT) ELSE -1 END)`;
}

/** The part of s a search looks at: from `start` (negative: from the end), `length` characters (-1: all). */
function window(s: string, start: string, length: string): string {
  return `substring(${s}, ${start} + 1, CASE WHEN ${length} = -1 THEN length(${s}) ELSE ${length} END)`;
}

const arg = (a: SqlArg | undefined, t: 'long' | 'string', fallback: string) => (a ? castTo(a, t) : fallback);

/** indexof(source, lookup [, start [, length [, occurrence]]]) (KQL): -1 when not found. */
function indexofSql([s, l, st, len, occ]: SqlArg[]): string {
  const src = asStringSql(s!);
  const look = asStringSql(l!);
  const rawStart = arg(st, 'long', '0');
  const start = `(CASE WHEN ${rawStart} < 0 THEN greatest(length(${src}) + ${rawStart}, 0) ELSE ${rawStart} END)`;
  const length = arg(len, 'long', '-1');
  const n = arg(occ, 'long', '1');
  const w = window(src, start, length);
  // The first occurrence (the default) is found without splitting the text at every occurrence: the
  // lists a split makes are held outside DuckDB's memory_limit (5,000 occurrences a row: +1.3 GB a batch).
  const found = isFirst(occ)
    ? `(CASE WHEN strpos(${w}, ${look}) > 0 THEN CAST(${start} + strpos(${w}, ${look}) - 1 AS BIGINT) ELSE -1 END)`
    : nthPosition(
        `string_split(${w}, ${look})`,
        `list_transform(range(len(string_split(${w}, ${look})) - 1), i -> ${look})`,
        start,
        n,
      );
  return `(CASE WHEN ${src} IS NULL OR ${look} IS NULL THEN NULL WHEN ${length} < -1 OR ${n} < 1 THEN NULL WHEN ${start} > length(${src}) THEN -1 WHEN ${look} = '' THEN ${start} ELSE ${found} END)`;
}

/** Whether an occurrence argument asks for the first one (it is absent, or the constant 1). */
const isFirst = (occ: SqlArg | undefined) => occ === undefined || constantNumber(occ) === 1;

/** indexof_regex(source, regex [, start [, occurrence [, length]]]): null for a negative start. */
function indexofRegexSql([s, re, st, occ, len]: SqlArg[]): string {
  const src = asStringSql(s!);
  const pattern = asStringSql(re!);
  const start = arg(st, 'long', '0');
  const n = arg(occ, 'long', '1');
  const length = arg(len, 'long', '-1');
  const w = window(src, start, length);
  // The first match: the text before it is what replacing it and all after it leaves, with no list.
  const found = isFirst(occ)
    ? `(CASE WHEN regexp_matches(${w}, ${pattern}) THEN CAST(${start} + length(regexp_replace(${w}, '(?s)(?:' || ${pattern} || ').*$', '')) AS BIGINT) ELSE -1 END)`
    : nthPosition(`regexp_split_to_array(${w}, ${pattern})`, `regexp_extract_all(${w}, ${pattern})`, start, n);
  return `(CASE WHEN ${src} IS NULL OR ${start} < 0 OR ${n} < 1 OR ${length} < -1 THEN NULL WHEN ${start} > length(${src}) THEN -1 ELSE ${found} END)`;
}

/** Trims the matches of a regular expression at the start, the end, or both. */
function trimRegex(start: boolean, end: boolean): ScalarFunction {
  return fixed('string', ['string', 'string'], ([re, s]) => {
    let out = s!;
    if (start) out = `regexp_replace(${out}, '^(?:' || ${re} || ')+', '')`;
    if (end) out = `regexp_replace(${out}, '(?:' || ${re} || ')+$', '')`;
    return out;
  });
}

/** Luhn's checksum over the digits of s (spaces and dashes dropped), when there are `lengths` of them. */
function luhnSql(s: string, lengths: [number, number]): string {
  const d = `reverse(regexp_replace(${s}, '[ -]', '', 'g'))`;
  const digit = (i: string) => `CAST(substr(${d}, ${i} + 1, 1) AS INTEGER)`;
  const sum = `list_sum(list_transform(range(length(${d})), i -> CASE WHEN i % 2 = 1 THEN (CASE WHEN ${digit('i')} * 2 > 9 THEN ${digit('i')} * 2 - 9 ELSE ${digit('i')} * 2 END) ELSE ${digit('i')} END))`;
  return `COALESCE(regexp_full_match(${d}, '[0-9]{${lengths[0]},${lengths[1]}}') AND ${sum} % 10 = 0, FALSE)`;
}

/** The most repetitions strrep makes, as in KQL. */
const STRREP_LIMIT = 1024;

/** Byte units of parse_bytes, by power of the base. */
const BYTE_UNITS: Record<string, number> = lookupTable({
  '': 0,
  B: 0,
  K: 1,
  KB: 1,
  KIB: 1,
  M: 2,
  MB: 2,
  MIB: 2,
  G: 3,
  GB: 3,
  GIB: 3,
  T: 4,
  TB: 4,
  TIB: 4,
  P: 5,
  PB: 5,
  PIB: 5,
});

function parseBytesSql([s, base]: SqlArg[]): string {
  const text = `upper(trim(${asStringSql(s!)}))`;
  const re = `'^([0-9]+(?:\\.[0-9]+)?)\\s*([A-Z]*)$'`;
  const number = `TRY_CAST(regexp_extract(${text}, ${re}, 1) AS DOUBLE)`;
  const unit = `regexp_extract(${text}, ${re}, 2)`;
  const b = base ? `(CASE WHEN ${castTo(base, 'long')} = 10 THEN 1000 ELSE 1024 END)` : '1024';
  const power = `CASE ${unit} ${Object.entries(BYTE_UNITS)
    .map(([u, p]) => `WHEN '${u}' THEN ${p}`)
    .join(' ')} END`;
  return `COALESCE(TRY_CAST(round(${number} * pow(${b}, ${power})) AS BIGINT), 0)`;
}

/** A pair string split at its first separator: {key, value, separator}. */
function pairObject(s: string, sep: string): string {
  return `(CASE WHEN strpos(${s}, ${sep}) > 0 AND ${sep} <> '' THEN json_object('key', substr(${s}, 1, strpos(${s}, ${sep}) - 1), 'value', substr(${s}, strpos(${s}, ${sep}) + length(${sep})), 'separator', ${sep}) END)`;
}

/** A `*` wildcard pattern as a LIKE pattern (other LIKE characters taken literally). */
const likeOf = (p: string) =>
  `replace(replace(replace(replace(${p}, '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%')`;

/**
 * A URL from its parts: Axiom's keys (scheme, host, port, path, user, password, query, fragment) or those
 * parse_url answers (Scheme, Host, Port, Path, Username, Password, Query Parameters, Fragment); the query
 * a string or an object of parameters (URL-encoded here).
 */
function formatUrlSql(parts: SqlArg): string {
  return bindSql({ d: toDynamicSql(parts) }, ({ d }) => {
    const part = (...keys: string[]) =>
      `COALESCE(${keys.map((k) => `json_extract_string(${d}, ${keyPath(k)})`).join(', ')}, '')`;
    const q = `COALESCE(json_extract(${d}, '$.query'), json_extract(${d}, '$."Query Parameters"'))`;
    const params = `CASE WHEN json_type(${q}) = 'OBJECT' THEN array_to_string(list_transform(json_keys(${q}), k -> url_encode(k) || '=' || url_encode(json_extract_string(${q}, '/' || replace(replace(k, '~', '~0'), '/', '~1')))), '&') ELSE COALESCE(json_extract_string(${q}, '$'), '') END`;
    const scheme = part('scheme', 'Scheme');
    const user = part('user', 'Username');
    const password = part('password', 'Password');
    const port = part('port', 'Port');
    const path = part('path', 'Path');
    const fragment = part('fragment', 'Fragment');
    const auth = `CASE WHEN ${user} <> '' THEN ${user} || CASE WHEN ${password} <> '' THEN ':' || ${password} ELSE '' END || '@' ELSE '' END`;
    return `(CASE WHEN json_type(${d}) = 'OBJECT' THEN (CASE WHEN ${scheme} <> '' THEN ${scheme} || '://' ELSE '' END) || ${auth} || ${part('host', 'Host')} || (CASE WHEN ${port} <> '' THEN ':' || ${port} ELSE '' END) || (CASE WHEN ${path} <> '' AND NOT starts_with(${path}, '/') THEN '/' ELSE '' END) || ${path} || (CASE WHEN (${params}) <> '' THEN '?' || regexp_replace(${params}, '^\\?', '') ELSE '' END) || (CASE WHEN ${fragment} <> '' THEN '#' || ${fragment} ELSE '' END) END)`;
  });
}

const keyPath = (k: string) => sqlText(`$."${k}"`);

export const STRING_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  format_url: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'string',
    sql: ([d]) => formatUrlSql(d!),
    // The query's keys and values are URL-encoded: a byte may take three.
    madeBytes: ([d]) => 3 * d!.bytes,
  },
  indexof: { minArgs: 2, maxArgs: 5, returns: () => 'long', sql: indexofSql },
  indexof_regex: { minArgs: 2, maxArgs: 5, returns: () => 'long', sql: indexofRegexSql },
  // Each match replaced by one character, against each replaced by none: the count, with no list of them.
  countof_regex: fixed(
    'long',
    ['string', 'string'],
    ([re, s]) =>
      `CAST(length(regexp_replace(${s}, ${re}, '_', 'g')) - length(regexp_replace(${s}, ${re}, '', 'g')) AS BIGINT)`,
  ),
  // RE2's metacharacters, each escaped with a backslash.
  regex_quote: {
    ...fixed('string', ['string'], ([s]) => `regexp_replace(${s}, '([\\\\.+*?()|\\[\\]{}^$])', '\\\\\\1', 'g')`),
    madeBytes: ([s]) => 2 * s!.bytes,
  },
  trim_regex: trimRegex(true, true),
  trim_start_regex: trimRegex(true, false),
  trim_end_regex: trimRegex(false, true),
  // A replacement list shorter than the search list repeats its last character; an empty one deletes (KQL).
  translate: {
    ...fixed(
      'string',
      ['string', 'string', 'string'],
      ([from, to, s]) =>
        `translate(${s}, ${from}, CASE WHEN length(${to}) = 0 THEN '' ELSE rpad(${to}, CAST(greatest(length(${from}), length(${to})) AS INTEGER), right(${to}, 1)) END)`,
    ),
    // A one-byte character may become a four-byte one.
    madeBytes: ([, , s]) => 4 * s!.bytes,
  },
  // The string as a JSON string literal: in double quotes, with quotes, backslashes and controls escaped.
  quote: {
    ...fixed('string', ['string'], ([s]) => `CAST(to_json(${s}) AS VARCHAR)`),
    madeBytes: ([s]) => JSON_QUOTING * s!.bytes + 2,
  },
  strrep: {
    minArgs: 2,
    maxArgs: 3,
    returns: (args) => {
      args.forEach((a, i) => checkConvertible(a, (['string', 'long', 'string'] as const)[i]!, i));
      return 'string';
    },
    sql: ([s, n, d]) => {
      const [text, count, delimiter] = [castTo(s!, 'string'), castTo(n!, 'long'), d ? castTo(d, 'string') : "''"];
      const out = `(CASE WHEN ${count} >= 1 THEN repeat(${text} || ${delimiter}, CAST(least(${count}, ${STRREP_LIMIT}) AS INTEGER) - 1) || ${text} WHEN ${count} IS NOT NULL THEN '' END)`;
      // A constant count is in the estimate; a count read from the rows is checked against their share.
      if (constantNumber(n) !== undefined) return out;
      // DuckDB's least() passes over a null: the count's own null must stay one.
      const bytes = `(CASE WHEN ${count} IS NOT NULL THEN (strlen(${text}) + strlen(${delimiter})) * least(${count}, ${STRREP_LIMIT}) END)`;
      return withinRowShare('strrep', bytes, out);
    },
    madeBytes: ([s, n, d]) => {
      const count = constantNumber(n);
      return count === undefined
        ? undefined
        : (s!.bytes + (d?.bytes ?? 0)) * Math.max(1, Math.min(STRREP_LIMIT, count));
    },
  },
  strcmp: fixed(
    'long',
    ['string', 'string'],
    ([a, b]) => `(CASE WHEN ${a} < ${b} THEN -1 WHEN ${a} > ${b} THEN 1 WHEN ${a} = ${b} THEN 0 END)`,
  ),
  strip_ansi_escapes: fixed(
    'string',
    ['string'],
    ([s]) =>
      `regexp_replace(regexp_replace(${s}, '\\x1b\\][^\\x07\\x1b]*(?:\\x07|\\x1b\\\\)', '', 'g'), '\\x1b\\[[0-9;?]*[ -/]*[@-~]|\\x1b[@-Z\\\\-_]', '', 'g')`,
  ),
  totitle: fixed('string', ['string'], ([s]) => `(upper(left(${s}, 1)) || substr(${s}, 2))`),
  unicode_codepoints_from_string: {
    minArgs: 1,
    maxArgs: 1,
    shape: 'array',
    returns: () => 'dynamic',
    sql: ([a]) => {
      const s = asStringSql(a!);
      return `(CASE WHEN ${s} = '' THEN '[]'::JSON ELSE to_json(list_transform(string_split(${s}, ''), c -> unicode(c))) END)`;
    },
    // A character's number and its comma: four bytes for an ASCII character, at most.
    madeBytes: ([a]) => 4 * a!.bytes + 2,
  },
  // Code points that are not characters (surrogates, beyond U+10FFFF, NUL) are left out.
  unicode_codepoints_to_string: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'string',
    sql: ([a]) => {
      const l = `TRY_CAST(${toDynamicSql(a!)} AS BIGINT[])`;
      const chars = `list_transform(list_filter(${l}, x -> x BETWEEN 1 AND 1114111 AND NOT x BETWEEN 55296 AND 57343), x -> chr(CAST(x AS INTEGER)))`;
      return `(CASE WHEN ${l} IS NOT NULL THEN COALESCE(array_to_string(${chars}, ''), '') END)`;
    },
  },
  parse_urlquery: {
    minArgs: 1,
    maxArgs: 1,
    shape: 'dictionary',
    returns: () => 'dynamic',
    sql: ([q]) => `(CASE WHEN ${asStringSql(q!)} IS NOT NULL THEN ${queryParamsSql(asStringSql(q!))} END)`,
  },
  // Axiom's keys: scheme, host, port, directory, basename, extension (without its dot), query (with its "?").
  parse_path: {
    minArgs: 1,
    maxArgs: 1,
    shape: 'dictionary',
    returns: () => 'dynamic',
    sql: ([p]) => {
      const s = asStringSql(p!);
      const re = `'^(?:([a-zA-Z][a-zA-Z0-9+.-]*)://([^/:?#]*)(?::([0-9]+))?)?([^?#]*)(\\?[^#]*)?'`;
      const g = (i: number) => `regexp_extract(${s}, ${re}, ${i})`;
      const path = g(4);
      const base = `regexp_extract(${path}, '[^/\\\\]*$')`;
      const dir = `left(${path}, length(${path}) - length(${base}))`;
      const ext = `regexp_extract(${base}, '\\.([^.]*)$', 1)`;
      return `(CASE WHEN ${s} IS NOT NULL THEN json_object('scheme', ${g(1)}, 'host', ${g(2)}, 'port', ${g(3)}, 'directory', CASE WHEN length(${dir}) > 1 THEN rtrim(${dir}, '/\\') ELSE ${dir} END, 'basename', ${base}, 'extension', ${ext}, 'query', ${g(5)}) END)`;
    },
  },
  // The first record of a line of CSV, its fields as strings (quotes and doubled quotes handled).
  parse_csv: {
    minArgs: 1,
    maxArgs: 1,
    shape: 'array',
    returns: () => 'dynamic',
    sql: ([s]) => `CAST(ferry_parse_csv(${asStringSql(s!)}) AS JSON)`,
  },
  parse_bytes: { minArgs: 1, maxArgs: 2, returns: () => 'long', sql: parseBytesSql },
  // Two's complement for negative numbers (KQL); minLength pads with zeros.
  tohex: {
    minArgs: 1,
    maxArgs: 2,
    returns: () => 'string',
    sql: ([v, min]) => {
      const hex = `lower(to_hex(${castTo(v!, 'long')}))`;
      if (!min) return hex;
      const width = castTo(min, 'long');
      const out = `lpad(${hex}, CAST(greatest(${width}, length(${hex})) AS INTEGER), '0')`;
      return constantNumber(min) !== undefined ? out : withinRowShare('tohex', width, out);
    },
    // Padded to the width asked for.
    madeBytes: ([, min]) => {
      if (!min) return 16;
      const width = constantNumber(min);
      return width === undefined ? undefined : Math.max(16, width);
    },
  },
  // Bytes as numbers 0-255; text that is not Base64 gives an empty array.
  base64_decode_toarray: {
    minArgs: 1,
    maxArgs: 1,
    shape: 'array',
    returns: () => 'dynamic',
    sql: ([s]) => {
      const hex = `hex(TRY(from_base64(${asStringSql(s!)})))`;
      return `(CASE WHEN ${asStringSql(s!)} IS NULL THEN NULL WHEN ${hex} IS NULL THEN '[]'::JSON ELSE to_json(list_transform(range(length(${hex}) // 2), i -> CAST('0x' || substr(${hex}, 2 * i + 1, 2) AS INTEGER))) END)`;
    },
    // Three bytes a four-byte group decodes to, each a number of up to three digits and its comma.
    madeBytes: ([a]) => 3 * a!.bytes + 2,
  },
  // An array of numbers 0-255 as Base64; anything else gives null.
  base64_encode_fromarray: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'string',
    sql: ([a]) => {
      const l = `TRY_CAST(${toDynamicSql(a!)} AS BIGINT[])`;
      return `(CASE WHEN list_bool_and(list_transform(${l}, x -> x BETWEEN 0 AND 255)) OR len(${l}) = 0 THEN to_base64(unhex(array_to_string(list_transform(${l}, x -> lpad(to_hex(x), 2, '0')), ''))) END)`;
    },
  },
  dynamic_to_json: fixed('string', ['dynamic'], ([d]) => `ferry_json_sorted(CAST(${d} AS VARCHAR))`),
  pair: fixed('string', ['string', 'string', 'string'], ([k, v, sep]) => `(${k} || ${sep ?? "':'"} || ${v})`, 1),
  parse_pair: {
    minArgs: 1,
    maxArgs: 2,
    shape: 'dictionary',
    returns: () => 'dynamic',
    sql: ([s, sep]) => pairObject(asStringSql(s!), sep ? asStringSql(sep) : "':'"),
  },
  // The first pair of the array whose key and value match the `*` patterns.
  find_pair: {
    minArgs: 3,
    maxArgs: 4,
    shape: 'dictionary',
    returns: () => 'dynamic',
    sql: ([a, kp, vp, sep]) => {
      const sepSql = sep ? asStringSql(sep) : "':'";
      const text = `json_extract_string(x, '$')`;
      const obj = pairObject(text, sepSql);
      const matches = `json_extract_string(${obj}, '$.key') LIKE ${likeOf(asStringSql(kp!))} ESCAPE '\\' AND json_extract_string(${obj}, '$.value') LIKE ${likeOf(asStringSql(vp!))} ESCAPE '\\'`;
      return `list_transform(list_filter(${jsonList(a!)}, x -> json_type(x) = 'VARCHAR' AND ${matches}), x -> ${obj})[1]`;
    },
  },
  iscc: fixed('bool', ['string'], ([s]) => luhnSql(s!, [12, 19])),
  isimei: fixed('bool', ['string'], ([s]) => luhnSql(s!, [15, 15])),
});
