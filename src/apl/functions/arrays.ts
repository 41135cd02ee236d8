/**
 * Array, bag and set functions over dynamic values. Arrays are read as DuckDB JSON[] lists (a value that is
 * not an array gives null, never a failed query) and written back as JSON; positions are APL's, from 0.
 */
import type { ArgInfo, ScalarFunction } from './catalog.js';
import { castTo, checkConvertible, fail } from './define.js';
import { sqlText } from '../../sql/quote.js';
import { asStringSql, bindSql, toDynamicSql, type SqlArg } from './sql.js';
import { lookupTable } from '../../util/lookup.js';
import { constantNumber, filledBytes, SCALAR_TEXT_BYTES } from './made-bytes.js';
import { withinRowShare } from '../../sql/row-share.js';

/** A dynamic value as a JSON[] list, or null when it is not an array. */
export const jsonList = (a: SqlArg) => `TRY_CAST(${toDynamicSql(a)} AS JSON[])`;

/** The number of a JSON element when it is one (JSON strings are not numbers here). */
const numberOf = (x: string) =>
  `(CASE WHEN json_type(${x}) IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN CAST(${x} AS DOUBLE) END)`;

/** A JSON element as text: strings unquoted, anything else its JSON. */
const textOf = (x: string) =>
  `(CASE WHEN json_type(${x}) = 'VARCHAR' THEN json_extract_string(${x}, '$') ELSE CAST(${x} AS VARCHAR) END)`;

/** A JSON pointer to a top-level key (RFC 6901 escapes). */
const keyPointer = (key: string) => `('/' || replace(replace(${key}, '~', '~0'), '/', '~1'))`;

/**
 * The distinct elements of a list, in the order they first appear, in O(n log n): sorted by value and
 * position, the first of each value kept, then put back in position order.
 */
const distinctInOrder = (l: string) =>
  bindSql({ s: `list_sort(list_transform(${l}, (x, i) -> {'x': x, 'i': i}))` }, ({ s }) => {
    const firsts = `list_filter(${s}, (e, j) -> j = 1 OR e.x IS DISTINCT FROM ${s}[j - 1].x)`;
    return `list_transform(list_sort(list_transform(${firsts}, e -> {'i': e.i, 'x': e.x})), e -> e.x)`;
  });

function arrayFn(
  minArgs: number,
  maxArgs: number,
  sql: (args: SqlArg[]) => string,
  check?: (args: ArgInfo[]) => void,
): ScalarFunction {
  return {
    minArgs,
    maxArgs,
    shape: 'array',
    returns: (args) => {
      check?.(args);
      return 'dynamic';
    },
    sql,
  };
}

/** Elements moved left by n (right when n < 0); positions left empty take `fill` (null). */
function shiftSql(a: SqlArg, n: string, fill: SqlArg | undefined): string {
  return bindSql(
    { l: jsonList(a), n, f: fill ? toDynamicSql(fill) : 'NULL::JSON' },
    (v) =>
      `to_json(list_transform(range(1, len(${v.l}) + 1), i -> CASE WHEN i + ${v.n} BETWEEN 1 AND len(${v.l}) THEN ${v.l}[i + ${v.n}] ELSE ${v.f} END))`,
  );
}

/** Elements rotated left by n (right when n < 0). */
function rotateSql(a: SqlArg, n: string): string {
  return bindSql({ l: jsonList(a), n }, (v) => {
    const k = `(((${v.n}) % len(${v.l})) + len(${v.l})) % len(${v.l})`;
    return `to_json(CASE WHEN ${v.l} IS NULL OR ${v.n} IS NULL THEN NULL WHEN len(${v.l}) = 0 THEN ${v.l} ELSE list_concat(list_slice(${v.l}, ${k} + 1, len(${v.l})), list_slice(${v.l}, 1, ${k})) END)`;
  });
}

/** Sorted: numbers by value before other values by their JSON text, nulls last unless asked first. */
function sortSql(a: SqlArg, desc: boolean, nullsLast: SqlArg | undefined): string {
  const l = jsonList(a);
  const last = nullsLast ? castTo(nullsLast, 'bool') : 'TRUE';
  // Struct keys sort field by field: nulls' place, then the number, then the text.
  const nullKey = desc ? `((x IS NULL) <> ${last})` : `((x IS NULL) = ${last})`;
  const keyed = `list_transform(${l}, x -> {'n': ${nullKey}, 'k': ${numberOf('x')}, 's': CAST(x AS VARCHAR), 'v': x})`;
  return `to_json(list_transform(list_sort(${keyed}, '${desc ? 'DESC' : 'ASC'}', 'NULLS LAST'), e -> e.v))`;
}

/** The indices array_split cuts at: one number or an array of them, negative ones from the end. */
function splitSql(a: SqlArg, at: SqlArg): string {
  const idx = at.type === 'dynamic' ? `TRY_CAST(${at.sql} AS BIGINT[])` : `[${castTo(at, 'long')}]`;
  return bindSql({ l: jsonList(a), idx }, (v) =>
    bindSql(
      {
        l: v.l!,
        b: `list_concat([0], list_sort(list_transform(${v.idx}, i -> CASE WHEN i < 0 THEN greatest(len(${v.l}) + i, 0) ELSE least(i, len(${v.l})) END)), [len(${v.l})])`,
      },
      (w) =>
        `(CASE WHEN ${w.l} IS NOT NULL THEN to_json(list_transform(range(len(${w.b}) - 1), j -> list_slice(${w.l}, ${w.b}[j + 1] + 1, ${w.b}[j + 2]))) END)`,
    ),
  );
}

/** Set membership compares numbers as numbers and strings as text, anything else as JSON. */
function hasElementSql(set: SqlArg, v: SqlArg): string {
  const l = jsonList(set);
  if (v.type === 'long' || v.type === 'real')
    return `list_contains(list_transform(${l}, x -> ${numberOf('x')}), CAST(${v.sql} AS DOUBLE))`;
  if (v.type === 'string')
    return `list_contains(list_transform(${l}, x -> CASE WHEN json_type(x) = 'VARCHAR' THEN json_extract_string(x, '$') END), ${v.sql})`;
  return `list_contains(${l}, ${toDynamicSql(v)})`;
}

/** The largest array range() makes, as in KQL (a million elements). */
const RANGE_LIMIT = 1_048_576;

function rangeSql([start, stop, step]: SqlArg[]): string {
  const integral = [start, stop, step].every((x) => !x || x.type === 'long');
  const t = integral ? 'long' : 'real';
  const s = castTo(start!, t);
  const e = castTo(stop!, t);
  const d = step ? castTo(step, t) : integral ? '1' : '1.0';
  const n = `CAST(floor((${e} - ${s}) / ${d}) AS BIGINT)`;
  // DuckDB's own range for whole numbers; otherwise the values are bound once, since a lambda that
  // captures a column copies it for every element of the chunk's lists.
  const list = integral
    ? `range(${s}, ${s} + least(${n} + 1, ${RANGE_LIMIT}) * ${d}, ${d})`
    : bindSql({ s, d, n }, (b) => `list_transform(range(least(${b.n} + 1, ${RANGE_LIMIT})), i -> ${b.s} + i * ${b.d})`);
  const out = `(CASE WHEN ${n} IS NULL THEN NULL WHEN ${d} <> 0 AND ${n} >= 0 THEN to_json(${list}) WHEN ${d} <> 0 THEN '[]'::JSON END)`;
  if ([start, stop, step].every((x) => !x || constantNumber(x) !== undefined)) return out;
  // DuckDB's least() passes over a null: the count's own null must stay one.
  const bytes = `(CASE WHEN ${n} IS NOT NULL THEN least(${n} + 1, ${RANGE_LIMIT}) * ${SCALAR_TEXT_BYTES + 1} END)`;
  return withinRowShare('range', bytes, out);
}

/** A set operation over two or more arrays: the distinct elements of the first (or of all) that `keep`. */
function setFn(kind: 'union' | 'intersect' | 'difference'): ScalarFunction {
  return arrayFn(2, 64, (args) =>
    bindSql(Object.fromEntries(args.map((a, i) => [`l${i}`, jsonList(a)])), (v) => {
      const lists = args.map((_, i) => v[`l${i}`]!);
      if (kind === 'union') return `to_json(${distinctInOrder(`flatten([${lists.join(', ')}])`)})`;
      const [first, ...rest] = lists;
      const test = rest.map((r) => `${kind === 'intersect' ? '' : 'NOT '}list_contains(${r}, x)`).join(' AND ');
      return `to_json(list_filter(${distinctInOrder(first!)}, x -> ${test}))`;
    }),
  );
}

/** The values a JSONPath selects in an array (a constant path; `[*]` selects from every element). */
function arrayExtractSql(a: SqlArg, path: SqlArg): string {
  const p = path.constant?.value;
  if (typeof p !== 'string' || !p.startsWith('$')) fail('the path must be a constant JSONPath, such as $[*].value');
  const selected = `json_extract(${toDynamicSql(a)}, ${sqlText(p as string)})`;
  // DuckDB answers a list for a path with a wildcard and one value otherwise.
  return /\[\*\]|\.\*/.test(p as string)
    ? `to_json(${selected})`
    : `(CASE WHEN ${selected} IS NOT NULL THEN json_array(${selected}) ELSE '[]'::JSON END)`;
}

export const ARRAY_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  array_extract: arrayFn(2, 2, ([a, p]) => arrayExtractSql(a!, p!)),
  array_reverse: arrayFn(1, 1, ([a]) => `to_json(list_reverse(${jsonList(a!)}))`),
  array_sort_asc: arrayFn(1, 2, ([a, n]) => sortSql(a!, false, n)),
  array_sort_desc: arrayFn(1, 2, ([a, n]) => sortSql(a!, true, n)),
  array_split: arrayFn(2, 2, ([a, at]) => splitSql(a!, at!)),
  array_rotate_left: arrayFn(
    2,
    2,
    ([a, n]) => rotateSql(a!, castTo(n!, 'long')),
    (args) => checkConvertible(args[1]!, 'long', 1),
  ),
  array_rotate_right: arrayFn(
    2,
    2,
    ([a, n]) => rotateSql(a!, `-(${castTo(n!, 'long')})`),
    (args) => checkConvertible(args[1]!, 'long', 1),
  ),
  // KQL's shifts (the docs' example output pads with null): elements leave at one end, nulls (or the fill) enter at the other.
  array_shift_left: {
    ...arrayFn(1, 3, ([a, n, f]) => shiftSql(a!, n ? castTo(n, 'long') : '1', f)),
    madeBytes: ([a, , f]) => filledBytes(a, f),
  },
  array_shift_right: {
    ...arrayFn(1, 3, ([a, n, f]) => shiftSql(a!, n ? `-(${castTo(n, 'long')})` : '-1', f)),
    madeBytes: ([a, , f]) => filledBytes(a, f),
  },
  // Element-wise choice; a non-array branch is used for every element.
  array_iff: {
    ...arrayFn(3, 3, ([c, x, y]) =>
      bindSql(
        {
          c: jsonList(c!),
          x: x!.type === 'dynamic' ? jsonList(x!) : toDynamicSql(x!),
          y: y!.type === 'dynamic' ? jsonList(y!) : toDynamicSql(y!),
        },
        (v) => {
          const pick = (b: SqlArg, ref: string) => (b.type === 'dynamic' ? `${ref}[i]` : ref);
          return `to_json(list_transform(range(1, len(${v.c}) + 1), i -> CASE WHEN TRY_CAST(${v.c}[i] AS BOOLEAN) THEN ${pick(x!, v.x!)} WHEN NOT TRY_CAST(${v.c}[i] AS BOOLEAN) THEN ${pick(y!, v.y!)} END))`;
        },
      ),
    ),
    madeBytes: ([c, x, y]) => filledBytes(c, x!.bytes > y!.bytes ? x : y),
  },
  array_select_dict: {
    minArgs: 3,
    maxArgs: 3,
    shape: 'dictionary',
    returns: () => 'dynamic',
    sql: ([a, k, v]) =>
      `list_filter(${jsonList(a!)}, d -> json_type(d) = 'OBJECT' AND json_extract(d, ${keyPointer(asStringSql(k!))}) = ${toDynamicSql(v!)})[1]`,
  },
  bag_has_key: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'bool',
    sql: ([b, k]) => {
      const bag = toDynamicSql(b!);
      return `COALESCE(json_type(${bag}) = 'OBJECT' AND json_exists(${bag}, ${keyPointer(asStringSql(k!))}), FALSE)`;
    },
  },
  // Keys that are not strings are passed over; a key seen again keeps its first value; missing values are null.
  bag_zip: {
    minArgs: 2,
    maxArgs: 2,
    shape: 'dictionary',
    returns: () => 'dynamic',
    sql: ([ks, vs]) =>
      bindSql({ k: jsonList(ks!), v: jsonList(vs!) }, ({ k, v }) => {
        const entries = `list_transform(list_filter(range(1, len(${k}) + 1), i -> json_type(${k}[i]) = 'VARCHAR' AND list_position(${k}, ${k}[i]) = i), i -> {'k': json_extract_string(${k}[i], '$'), 'v': ${v}[i]})`;
        return `(CASE WHEN ${k} IS NOT NULL THEN to_json(map_from_entries(${entries})) END)`;
      }),
  },
  set_union: setFn('union'),
  set_intersect: setFn('intersect'),
  set_difference: setFn('difference'),
  set_has_element: { minArgs: 2, maxArgs: 2, returns: () => 'bool', sql: ([s, v]) => hasElementSql(s!, v!) },
  range: {
    ...arrayFn(2, 3, rangeSql, (args) =>
      args.forEach((a, i) =>
        a.type === 'long' || a.type === 'real' ? undefined : fail(`argument ${i + 1} must be a number, not ${a.type}`),
      ),
    ),
    // Each element a number and its comma, as many as the constants say.
    madeBytes: ([start, stop, step]) => {
      const [s, e, d] = [constantNumber(start), constantNumber(stop), step ? constantNumber(step) : 1];
      if (s === undefined || e === undefined || d === undefined) return undefined;
      const n = d === 0 ? 0 : Math.floor((e - s) / d) + 1;
      return Math.max(0, Math.min(n, RANGE_LIMIT)) * (SCALAR_TEXT_BYTES + 1) + 2;
    },
    elementBytes: () => SCALAR_TEXT_BYTES,
  },
  // The elements as text joined by the delimiter (DuckDB's array_to_string wants a constant delimiter).
  strcat_array: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'string',
    sql: ([a, d]) => {
      const texts = `list_filter(list_transform(${jsonList(a!)}, x -> ${textOf('x')}), t -> t IS NOT NULL)`;
      return `(CASE WHEN len(${texts}) = 0 THEN '' ELSE list_reduce(${texts}, (x, y) -> x || ${asStringSql(d!)} || y) END)`;
    },
    // A delimiter between elements, each at least two bytes of the array (a value and a comma).
    madeBytes: ([a, d]) => a!.bytes + Math.ceil(a!.bytes / 2) * d!.bytes,
  },
  // An array as it is; any other value (a bag, a number) as an array of that one value; null stays null.
  toarray: arrayFn(1, 1, ([a]) => {
    const v = toDynamicSql(a!);
    return `(CASE WHEN json_type(${v}) = 'ARRAY' THEN ${v} WHEN ${v} IS NOT NULL AND json_type(${v}) <> 'NULL' THEN json_array(${v}) END)`;
  }),
});
