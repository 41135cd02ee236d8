/**
 * APL's scalar functions in JavaScript, for event pipelines (./compile.ts): each means what its SQL in the
 * catalog (../functions/) means, argument conversions and null rules included. The binder has already
 * checked the arguments and typed the call; an entry here builds the closure once per call site.
 */
import type { BExpr } from '../binder/bound.js';
import { unify } from '../functions/define.js';
import type { AplType } from '../types.js';
import type { Ev } from './compile.js';
import { convertValue, toBoolValue, toStringValue, type Value } from './values.js';

type Call = Extract<BExpr, { k: 'call' }>;

/** What an entry builds its closure with: its arguments compiled, as they are or converted. */
export interface Compiler {
  compile(e: BExpr): Ev;
  as(e: BExpr, to: AplType): Ev;
  /** A value's text (null stays null). */
  text(e: BExpr): (row: Readonly<Record<string, unknown>>) => string | null;
}

export type JsFunction = (call: Call, c: Compiler) => Ev;

/** A conversion: tostring() is "" for null; the others keep null. */
function conversion(to: AplType): JsFunction {
  return ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const from = a!.type;
    if (to === 'string') return (row) => toStringValue(f(row), from) ?? '';
    return (row) => convertValue(f(row), from, to);
  };
}

/** A function of strings that keeps null. */
function text1(f: (s: string) => Value): JsFunction {
  return ({ args: [a] }, c) => {
    const s = c.text(a!);
    return (row) => {
      const v = s(row);
      return v === null ? null : f(v);
    };
  };
}

/** A function whose arguments are converted to fixed types, null when any is null (as SQL's are). */
function fixed(types: AplType[], f: (...args: never[]) => Value): JsFunction {
  return ({ args }, c) => {
    const parts = args.map((a, i) => c.as(a, types[i]!));
    return (row) => {
      const vals: Value[] = [];
      for (const p of parts) {
        const v = p(row);
        if (v === null) return null;
        vals.push(v);
      }
      return (f as (...a: Value[]) => Value)(...vals);
    };
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
