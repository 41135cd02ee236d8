/**
 * Array and bag functions for event pipelines, meaning what ../functions/{scalar,arrays}.ts's SQL means:
 * dynamic values are JSON values; a value packed into an array or a bag is written as JSON writes it (a
 * datetime as its RFC 3339 text).
 */
import type { JsFunction } from './function-kit.js';
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
