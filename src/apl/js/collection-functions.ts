/**
 * Array and bag functions for event pipelines, meaning what ../functions/{scalar,arrays}.ts's SQL means:
 * dynamic values are JSON values; a value packed into an array or a bag is written as JSON writes it (a
 * datetime as its RFC 3339 text).
 */
import { bigintList, jsonBool, type JsFunction } from './function-kit.js';
import { toDynamicValue, type Value } from './values.js';

const isBag = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Each argument as a dynamic (JSON) value. */
const dynamicArgs: (
  call: Parameters<JsFunction>[0],
  c: Parameters<JsFunction>[1],
) => ((row: Readonly<Record<string, unknown>>) => unknown)[] = ({ args }, c) =>
  args.map((a) => {
    const f = c.compile(a);
    return (row) => toDynamicValue(f(row), a.type) ?? null;
  });

/** The argument as an array, or null. */
function arrayArg(call: Parameters<JsFunction>[0], c: Parameters<JsFunction>[1], i: number) {
  const f = c.as(call.args[i]!, 'dynamic');
  return (row: Readonly<Record<string, unknown>>) => {
    const v = f(row);
    return Array.isArray(v) ? (v as unknown[]) : null;
  };
}

/** JSON equality of two values (list_position compares JSON values). */
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const pack: JsFunction = (call, c) => {
  const vals = dynamicArgs(call, c);
  return (row) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i + 1 < vals.length; i += 2) {
      const k = vals[i]!(row);
      // A key given again takes its last value, as the store's answer has it.
      if (typeof k !== 'string') continue;
      if (k === '__proto__')
        Object.defineProperty(out, k, {
          value: vals[i + 1]!(row),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else out[k] = vals[i + 1]!(row);
    }
    return out as Value;
  };
};

/** An element as text, as the store's arrays give it: a string as it is, anything else as its JSON. */
const elementText = (x: unknown) => (typeof x === 'string' ? x : JSON.stringify(x));

/** The distinct elements of an array, in their first order (JSON equality). */
function distinct(v: unknown[]): unknown[] {
  const seen = new Set<string>();
  return v.filter((x) => {
    const k = JSON.stringify(x ?? null);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** set_union / set_intersect / set_difference over the arrays given. */
function setFn(kind: 'union' | 'intersect' | 'difference'): JsFunction {
  return (call, c) => {
    const arrays = call.args.map((_, i) => arrayArg(call, c, i));
    return (row) => {
      const lists = arrays.map((a) => a(row));
      if (kind === 'union') return distinct(lists.flatMap((l) => l ?? [])) as Value;
      const [first, ...rest] = lists;
      if (!first || rest.some((r) => r === null)) return first ? [] : null;
      const keys = rest.map((r) => new Set(r!.map((x) => JSON.stringify(x ?? null))));
      return distinct(first).filter((x) => {
        const k = JSON.stringify(x ?? null);
        return keys.every((ks) => ks.has(k) === (kind === 'intersect'));
      }) as Value;
    };
  };
}

export const COLLECTION_JS_FUNCTIONS: Record<string, JsFunction> = {
  set_union: setFn('union'),
  set_intersect: setFn('intersect'),
  set_difference: setFn('difference'),
  set_has_element: (call, c) => {
    const a = arrayArg(call, c, 0);
    const vt = call.args[1]!.type;
    const v = c.compile(call.args[1]!);
    return (row) => {
      const list = a(row);
      const x = v(row);
      if (list === null) return null;
      if (x === null) return null;
      // A number is looked for among numbers, a string among strings, anything else as JSON.
      if (vt === 'long' || vt === 'real') return list.some((e) => typeof e === 'number' && e === Number(x));
      if (vt === 'string') return list.some((e) => e === x);
      const k = JSON.stringify(x);
      return list.some((e) => JSON.stringify(e) === k);
    };
  },
  strcat_array: (call, c) => {
    const a = arrayArg(call, c, 0);
    const d = c.text(call.args[1]!);
    return (row) => {
      const list = a(row);
      const delim = d(row);
      if (list === null || delim === null) return null;
      // Null elements are passed over, as the store's text of them is null.
      return list
        .filter((x) => x !== null && x !== undefined)
        .map(elementText)
        .join(delim);
    };
  },
  len: (call, c) => {
    const t = call.args[0]!.type;
    const f = c.compile(call.args[0]!);
    return (row) => {
      const v = f(row);
      if (v === null) return null;
      if (t === 'string' || (t === 'dynamic' && typeof v === 'string')) return [...(v as string)].length;
      return Array.isArray(v) ? v.length : null;
    };
  },
  pack_array: (call, c) => {
    const vals = dynamicArgs(call, c);
    return (row) => vals.map((v) => v(row)) as Value;
  },
  bag_pack: pack,
  pack,
  array_concat: (call, c) => {
    const arrays = call.args.map((_, i) => arrayArg(call, c, i));
    return (row) => {
      const out: unknown[] = [];
      // As DuckDB's flatten: a null list adds nothing.
      for (const a of arrays) for (const x of a(row) ?? []) out.push(x);
      return out as Value;
    };
  },
  array_sum: (call, c) => {
    const a = arrayArg(call, c, 0);
    return (row) => {
      const v = a(row);
      if (v === null || v.length === 0) return null;
      let sum = 0;
      let any = false;
      for (const x of v) {
        if (x === null) continue;
        const n =
          typeof x === 'number'
            ? x
            : typeof x === 'string' && x.trim() !== ''
              ? Number(x)
              : typeof x === 'boolean'
                ? Number(x)
                : NaN;
        if (Number.isNaN(n)) return null;
        sum += n;
        any = true;
      }
      return any ? sum : null;
    };
  },
  array_index_of: (call, c) => {
    const a = arrayArg(call, c, 0);
    const [, value] = dynamicArgs(call, c);
    return (row) => {
      // Not found, or no array to look in: -1.
      const v = a(row) ?? [];
      const x = value!(row);
      return v.findIndex((e) => sameJson(e, x));
    };
  },
  array_slice: (call, c) => {
    const a = arrayArg(call, c, 0);
    const [s, e] = [c.as(call.args[1]!, 'long'), c.as(call.args[2]!, 'long')];
    return (row) => {
      const v = a(row);
      const from = s(row) as number | null;
      const to = e(row) as number | null;
      if (v === null || from === null || to === null) return null;
      // DuckDB's list_slice(l, from + 1, to + 1): 1-based and inclusive, a negative index counted from the end.
      const n = v.length;
      let begin = Number(from) + 1;
      let end = Number(to) + 1;
      if (begin < 0) begin = n + begin + 1;
      if (end < 0) end = n + end + 1;
      begin = Math.max(begin, 1);
      end = Math.min(end, n);
      return (end >= begin ? v.slice(begin - 1, end) : []) as Value;
    };
  },
  array_reverse: (call, c) => {
    const a = arrayArg(call, c, 0);
    return (row) => {
      const v = a(row);
      return v === null ? null : ([...v].reverse() as Value);
    };
  },
  bag_has_key: (call, c) => {
    const b = c.as(call.args[0]!, 'dynamic');
    const k = c.as(call.args[1]!, 'string');
    return (row) => {
      const bag = b(row);
      const key = k(row) as string | null;
      return isBag(bag) && key !== null && Object.hasOwn(bag, key);
    };
  },
};

/** The sort key of an element: nulls' place, then numbers by value (a non-number after every number), then JSON text. */
function sorted(v: unknown[], desc: boolean, nullsLast: boolean): unknown[] {
  const keyed = v.map((x) => ({
    isNull: x === null || x === undefined,
    n: typeof x === 'number' ? x : null,
    s: JSON.stringify(x ?? null),
    x,
  }));
  const dir = desc ? -1 : 1;
  keyed.sort((a, b) => {
    // The null element's place is its own field, compared in the sort's direction like the others.
    const na = desc ? a.isNull !== nullsLast : a.isNull === nullsLast;
    const nb = desc ? b.isNull !== nullsLast : b.isNull === nullsLast;
    if (na !== nb) return (na ? 1 : -1) * dir;
    // A null number is greater than any number, in either direction.
    if (a.n !== b.n) {
      if (a.n === null) return dir;
      if (b.n === null) return -dir;
      return (a.n < b.n ? -1 : 1) * dir;
    }
    return a.s === b.s ? 0 : (a.s < b.s ? -1 : 1) * dir;
  });
  return keyed.map((k) => k.x ?? null);
}

function sortFn(desc: boolean): JsFunction {
  return (call, c) => {
    const a = arrayArg(call, c, 0);
    const last = call.args[1] ? c.as(call.args[1], 'bool') : () => true;
    return (row) => {
      const v = a(row);
      const l = last(row);
      if (v === null) return null;
      // A null "nulls last" puts every element's null key in one place: the order of the rest stands.
      return sorted(v, desc, l === null ? !desc : (l as boolean)) as Value;
    };
  };
}

/** Elements moved left by n (right when n < 0); positions left empty take the fill (null). */
function shiftFn(sign: 1 | -1): JsFunction {
  return (call, c) => {
    const a = arrayArg(call, c, 0);
    const n = call.args[1] ? c.as(call.args[1], 'long') : () => 1;
    const fillOf = call.args[2] ? dynamicArgs(call, c)[2]! : () => null;
    return (row) => {
      const v = a(row);
      if (v === null) return null;
      const k = n(row) as number | null;
      const fill = fillOf(row);
      return v.map((_, i) => {
        const j = k === null ? -1 : i + sign * k;
        return j >= 0 && j < v.length ? v[j] : fill;
      }) as Value;
    };
  };
}

function rotateFn(sign: 1 | -1): JsFunction {
  return (call, c) => {
    const a = arrayArg(call, c, 0);
    const n = c.as(call.args[1]!, 'long');
    return (row) => {
      const v = a(row);
      const m = n(row) as number | null;
      if (v === null || m === null) return null;
      if (v.length === 0) return v as Value;
      const k = (((sign * m) % v.length) + v.length) % v.length;
      return [...v.slice(k), ...v.slice(0, k)] as Value;
    };
  };
}

/** The largest array range() makes, as in KQL (a million elements). */
const RANGE_LIMIT = 1_048_576;

/** One step of a constant JSONPath: a key, an index (negative from the end) or a wildcard. */
type PathStep = { key: string } | { index: number } | { all: true };

/** A JSONPath of keys, [n], [#-n], [*] and .*; anything else is refused where the pipeline loads. */
function jsonPath(p: string): PathStep[] {
  const steps: PathStep[] = [];
  const re = /\.([A-Za-z_$][\w$]*)|\."((?:[^"\\]|\\.)*)"|\[(-?\d+)\]|\[#-(\d+)\]|\[\*\]|\.\*|\["((?:[^"\\]|\\.)*)"\]/y;
  re.lastIndex = 1;
  while (re.lastIndex < p.length) {
    const m = re.exec(p);
    if (!m)
      throw new Error(
        `array_extract(): the path ${p} is beyond what an event pipeline reads ($, .key, ["key"], [n], [#-n], [*], .*)`,
      );
    if (m[1] !== undefined) steps.push({ key: m[1] });
    else if (m[2] !== undefined) steps.push({ key: JSON.parse(`"${m[2]}"`) as string });
    else if (m[3] !== undefined) steps.push({ index: Number(m[3]) });
    else if (m[4] !== undefined) steps.push({ index: -Number(m[4]) });
    else if (m[5] !== undefined) steps.push({ key: JSON.parse(`"${m[5]}"`) as string });
    else steps.push({ all: true });
  }
  return steps;
}

function select(values: unknown[], step: PathStep): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    if ('all' in step) {
      if (Array.isArray(v)) out.push(...v);
      else if (isBag(v)) out.push(...Object.values(v));
    } else if ('index' in step) {
      if (!Array.isArray(v)) continue;
      const i = step.index < 0 ? v.length + step.index : step.index;
      if (i >= 0 && i < v.length) out.push(v[i]);
    } else if (isBag(v) && Object.hasOwn(v, step.key)) out.push(v[step.key]);
  }
  return out;
}

Object.assign(COLLECTION_JS_FUNCTIONS, {
  pack_dictionary: pack,
  array_sort_asc: sortFn(false),
  array_sort_desc: sortFn(true),
  array_shift_left: shiftFn(1),
  array_shift_right: shiftFn(-1),
  array_rotate_left: rotateFn(1),
  array_rotate_right: rotateFn(-1),
  array_split: (call, c) => {
    const a = arrayArg(call, c, 0);
    const atArg = call.args[1]!;
    const at =
      atArg.type === 'dynamic'
        ? (
            (f) => (row: Readonly<Record<string, unknown>>) =>
              bigintList(f(row)) ?? []
          )(c.compile(atArg))
        : ((f) => (row: Readonly<Record<string, unknown>>) => [f(row) as number | null])(c.as(atArg, 'long'));
    return (row) => {
      const v = a(row);
      if (v === null) return null;
      const n = v.length;
      const cuts = at(row)
        .map((i) => (i === null ? n : i < 0 ? Math.max(n + i, 0) : Math.min(i, n)))
        .sort((x, y) => x - y);
      const bounds = [0, ...cuts, n];
      const out: unknown[][] = [];
      for (let j = 0; j + 1 < bounds.length; j++) out.push(v.slice(bounds[j], Math.max(bounds[j]!, bounds[j + 1]!)));
      return out as Value;
    };
  },
  // Element-wise choice: an array branch gives its element at the same place, any other value itself.
  array_iff: (call, c) => {
    const cond = arrayArg(call, c, 0);
    const [, xs, ys] = dynamicArgs(call, c);
    return (row) => {
      const l = cond(row);
      if (l === null) return null;
      const [x, y] = [xs!(row), ys!(row)];
      const pick = (b: unknown, i: number) => (Array.isArray(b) ? (b[i] ?? null) : b);
      return l.map((t, i) => {
        const b = jsonBool(t);
        return b === null ? null : pick(b ? x : y, i);
      }) as Value;
    };
  },
  array_select_dict: (call, c) => {
    const a = arrayArg(call, c, 0);
    const key = c.text(call.args[1]!);
    const [, , value] = dynamicArgs(call, c);
    return (row) => {
      const l = a(row);
      const k = key(row);
      const want = JSON.stringify(value!(row));
      if (l === null || k === null) return null;
      for (const d of l) if (isBag(d) && Object.hasOwn(d, k) && JSON.stringify(d[k]) === want) return d as Value;
      return null;
    };
  },
  // Keys that are not strings are passed over; a key seen again keeps its first value; missing values are null.
  bag_zip: (call, c) => {
    const [ks, vs] = [arrayArg(call, c, 0), arrayArg(call, c, 1)];
    return (row) => {
      const keys = ks(row);
      if (keys === null) return null;
      const values = vs(row);
      const out: Record<string, unknown> = {};
      keys.forEach((k, i) => {
        if (typeof k !== 'string' || Object.hasOwn(out, k)) return;
        Object.defineProperty(out, k, {
          value: values?.[i] ?? null,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      });
      return out as Value;
    };
  },
  range: ({ args }, c) => {
    const integral = args.every((x) => x.type === 'long');
    const t = integral ? 'long' : 'real';
    const [s, e] = [c.as(args[0]!, t), c.as(args[1]!, t)];
    const d = args[2] ? c.as(args[2], t) : () => 1;
    return (row) => {
      const [start, stop, step] = [s(row), e(row), d(row)] as [number | null, number | null, number | null];
      if (start === null || stop === null || step === null || step === 0) return null;
      const n = Math.floor((stop - start) / step);
      if (!(n >= 0)) return [];
      const out: number[] = [];
      for (let i = 0; i < Math.min(n + 1, RANGE_LIMIT); i++) out.push(start + i * step);
      return out as Value;
    };
  },
  // An array as it is; any other value as an array of that one value; null stays null.
  toarray: ({ args: [a] }, c) => {
    const f = dynamicArgs({ args: [a!] } as Parameters<JsFunction>[0], c)[0]!;
    return (row) => {
      const v = f(row);
      return v === null ? null : ((Array.isArray(v) ? v : [v]) as Value);
    };
  },
  array_extract: ({ args: [a, p] }, c) => {
    const path = (p as { value?: unknown }).value;
    if (typeof path !== 'string' || !path.startsWith('$'))
      throw new Error('array_extract(): the path must be a constant JSONPath, such as $[*].value');
    const steps = jsonPath(path);
    const many = steps.some((s) => 'all' in s);
    const f = c.as(a!, 'dynamic');
    return (row) => {
      const v = f(row);
      if (v === null) return many ? null : [];
      let found: unknown[] = [v];
      for (const s of steps) found = select(found, s);
      if (many) return found.map((x) => x ?? null) as Value;
      return (found.length && found[0] !== null ? [found[0]] : []) as Value;
    };
  },
} satisfies Record<string, JsFunction>);
