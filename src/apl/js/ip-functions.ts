/**
 * IP functions for event pipelines, meaning what ../functions/ip.ts's SQL means: an IPv4 address is a
 * number (a text `a.b.c.d` with octets up to 255, optionally `/n`; a long between 0 and 2^32-1), a text's
 * `/n` its prefix (32 without one, null past 32), and a comparison uses the shortest prefix in play. IPv6
 * addresses are compared by ../functions/ipv6.ts, as the store compares them.
 */
import { compareIpv6 } from '../functions/ipv6.js';
import type { AplType } from '../types.js';
import { fixed, type Call, type Compiler, type JsFunction } from './function-kit.js';
import { typeOfValue, type Value } from './values.js';

type Row = Readonly<Record<string, unknown>>;

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(\/\d{1,2})?$/;

/** ferry_ipv4: the address of a text, or null. */
export function ipv4(s: string): number | null {
  const m = V4.exec(s);
  if (!m) return null;
  let n = 0;
  for (let i = 1; i <= 4; i++) {
    const o = Number(m[i]);
    if (o > 255) return null;
    n = n * 256 + o;
  }
  return n;
}

/** ferry_ipv4_bits: a text's prefix length (32 without `/`), null when it is no number from 0 to 32. */
export function ipv4Bits(s: string): number | null {
  const slash = s.indexOf('/');
  if (slash < 0) return 32;
  const rest = s.slice(slash + 1);
  const end = rest.indexOf('/');
  const part = (end < 0 ? rest : rest.slice(0, end)).trim();
  if (!/^[+-]?\d+$/.test(part)) return null;
  const n = Number(part);
  return n >= 0 && n <= 32 ? n : null;
}

/** An argument as an address: a whole number as it is (in range), anything else as its text. */
function addressOf(v: Value, t: AplType): { n: number | null; bits: number | null } {
  const type = t === 'dynamic' ? typeOfValue(v) : t;
  if (type === 'long' && (typeof v === 'number' || typeof v === 'bigint')) {
    const n = Number(v);
    return { n: n >= 0 && n <= 4294967295 ? n : null, bits: 32 };
  }
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return { n: ipv4(s), bits: ipv4Bits(s) };
}

/** The network part of an address over `bits`. */
const network = (n: number, bits: number) => Math.floor(n / 2 ** (32 - bits));

/** DuckDB's least(): the smallest value, nulls passed over. */
function least(...xs: (number | null)[]): number | null {
  let out: number | null = null;
  for (const x of xs) if (x !== null && (out === null || x < out)) out = x;
  return out;
}

const compare4: JsFunction = ({ args: [a, b, p] }, c) => {
  const [x, y] = [c.compile(a!), c.compile(b!)];
  const prefix = p ? c.as(p, 'long') : undefined;
  return (row) => {
    const va = x(row);
    const vb = y(row);
    if (va === null || vb === null) return null;
    const A = addressOf(va, a!.type);
    const B = addressOf(vb, b!.type);
    let asked: number | null = 32;
    if (prefix) {
      const q = prefix(row) as number | null;
      asked = q !== null && q >= 0 && q <= 32 ? Number(q) : null;
    }
    const m = least(A.bits, B.bits, asked);
    if (A.n === null || B.n === null || m === null) return null;
    const [l, r] = [network(A.n, m), network(B.n, m)];
    return l < r ? -1 : l > r ? 1 : 0;
  };
};

/** The masked address and its prefix: the argument's own /n, or the one asked for when it is shorter. */
function maskedOf(call: Call, c: Compiler) {
  const [a, p] = call.args;
  const f = c.compile(a!);
  const prefix = p ? c.as(p, 'long') : undefined;
  return (row: Row): { n: number; bits: number } | null => {
    const v = f(row);
    if (v === null) return null;
    const A = addressOf(v, a!.type);
    let asked: number | null = 32;
    if (prefix) {
      const q = prefix(row) as number | null;
      asked = q !== null && q >= 0 && q <= 32 ? q : null;
    }
    const bits = least(A.bits, A.bits, asked);
    return A.n === null || bits === null ? null : { n: network(A.n, bits) * 2 ** (32 - bits), bits };
  };
}

const dotted = (n: number) =>
  `${Math.floor(n / 16777216)}.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;

/**
 * The texts listed after the first argument: the elements of one dynamic array (null when it is none), or
 * the arguments' texts.
 */
function listed(call: Call, c: Compiler): (row: Row) => (string | null)[] | null {
  const items = call.args.slice(1);
  if (items.length === 1 && items[0]!.type === 'dynamic') {
    const f = c.compile(items[0]!);
    return (row) => {
      const v = f(row);
      return Array.isArray(v)
        ? v.map((x: unknown) => (x === null ? null : typeof x === 'string' ? x : JSON.stringify(x)))
        : null;
    };
  }
  const texts = items.map((e) => c.text(e));
  return (row) => texts.map((t) => t(row));
}

/** DuckDB's list_bool_or: true if any is, else false if any is false, null for none. */
function anyOf(results: (boolean | null)[]): boolean | null {
  let out: boolean | null = null;
  for (const r of results) {
    if (r === true) return true;
    if (r === false) out = false;
  }
  return out;
}

/** Whether `ip` lies in `range` (a range's own /n; an address alone is a range of one). */
function inRange4(ip: string, range: string): boolean | null {
  const [n, r, b] = [ipv4(ip), ipv4(range), ipv4Bits(range)];
  return n === null || r === null || b === null ? null : network(n, b) === network(r, b);
}

const ADDRESS_IN_TEXT = /\b\d{1,3}(?:\.\d{1,3}){3}\b/g;

/** The IPv4 addresses written in a text, each standing alone. */
const addressesIn = (s: string) => (s.match(ADDRESS_IN_TEXT) ?? []).filter((x) => ipv4(x) !== null);

/** A prefix has_ipv4_prefix takes: a whole address, or one to three octets ending with a dot. */
const validPrefix = (p: string) => ipv4(p) !== null || /^(?:\d{1,3}\.){1,3}$/.test(p);

/**
 * Whether any address written in the first argument passes `test` with any item: the items listed after it,
 * or (`second`) the second argument's text alone.
 */
function anyAddress(test: (address: string, item: string) => boolean | null, second = false): JsFunction {
  return (call, c) => {
    const text = c.text(call.args[0]!);
    const one = second ? c.text(call.args[1]!) : undefined;
    const items = one ? (row: Row) => [one(row)] : listed(call, c);
    return (row) => {
      const s = text(row);
      const list = items(row);
      if (s === null || list === null) return false;
      return anyOf(addressesIn(s).map((x) => anyOf(list.map((r) => (r === null ? null : test(x, r)))))) ?? false;
    };
  };
}

/** Whether the first argument is in any range listed after it (list_bool_or: null when none answers). */
function inAnyRange(within: (ip: string, range: string) => boolean | null): JsFunction {
  return (call, c) => {
    const ip = c.text(call.args[0]!);
    const ranges = listed(call, c);
    return (row) => {
      const s = ip(row);
      const list = ranges(row);
      if (list === null) return null;
      return anyOf(list.map((r) => (s === null || r === null ? null : within(s, r))));
    };
  };
}

/** ferry_ipv6_compare over the arguments' texts (the prefix 128 unless given). */
const compare6: JsFunction = ({ args: [a, b, p] }, c) => {
  const [x, y] = [c.text(a!), c.text(b!)];
  const prefix = p ? c.as(p, 'long') : () => 128;
  return (row) => {
    const [va, vb, q] = [x(row), y(row), prefix(row) as number | null];
    return va === null || vb === null || q === null ? null : compareIpv6(va, vb, q);
  };
};

const isZero =
  (f: JsFunction): JsFunction =>
  (call, c) => {
    const cmp = f(call, c);
    return (row) => {
      const v = cmp(row);
      return v === null ? null : v === 0;
    };
  };

export const IP_JS_FUNCTIONS: Record<string, JsFunction> = {
  parse_ipv4_mask: (call, c) => {
    const m = maskedOf(call, c);
    return (row) => m(row)?.n ?? null;
  },
  format_ipv4: (call, c) => {
    const m = maskedOf(call, c);
    return (row) => {
      const v = m(row);
      return v === null ? '' : dotted(v.n);
    };
  },
  format_ipv4_mask: (call, c) => {
    const m = maskedOf(call, c);
    return (row) => {
      const v = m(row);
      return v === null ? '' : `${dotted(v.n)}/${v.bits}`;
    };
  },
  ipv4_is_in_any_range: inAnyRange(inRange4),
  has_ipv4: ({ args: [s, ip] }, c) => {
    const [text, address] = [c.text(s!), c.text(ip!)];
    return (row) => {
      const a = address(row);
      if (a === null || ipv4(a) === null) return false;
      const v = text(row);
      return v === null ? null : addressesIn(v).includes(a);
    };
  },
  has_ipv4_prefix: (call, c) => {
    const prefix = c.text(call.args[1]!);
    const any = anyAddress((x, r) => x.startsWith(r), true)(call, c);
    return (row) => {
      const p = prefix(row);
      return p !== null && validPrefix(p) && (any(row) as boolean);
    };
  },
  has_any_ipv4: anyAddress(inRange4),
  has_any_ipv4_prefix: anyAddress((x, r) => validPrefix(r) && x.startsWith(r)),
  ipv6_compare: compare6,
  ipv6_is_match: isZero(compare6),
  ipv6_is_in_range: isZero(compare6),
  ipv6_is_in_any_range: inAnyRange((ip, range) => {
    const order = compareIpv6(ip, range, 128);
    return order === null ? null : order === 0;
  }),
  parse_ipv4: fixed(['string'], (s: string) => {
    const n = ipv4(s);
    const b = ipv4Bits(s);
    return n === null || b === null ? null : network(n, b) * 2 ** (32 - b);
  }),
  ipv4_is_in_range: fixed(['string', 'string'], (ip: string, range: string) => {
    const [n, r, b] = [ipv4(ip), ipv4(range), ipv4Bits(range)];
    return n === null || r === null || b === null ? null : network(n, b) === network(r, b);
  }),
  ipv4_is_private: fixed(['string'], (s: string) =>
    /^(?:10\.\d+|172\.(?:1[6-9]|2\d|3[01])|192\.168)\.\d+\.\d+$/.test(s),
  ),
  ipv4_compare: compare4,
  ipv4_is_match: (call, c) => {
    const cmp = compare4(call, c);
    return (row) => {
      const v = cmp(row);
      return v === null ? null : v === 0;
    };
  },
  ipv4_netmask_suffix: fixed(['string'], (s: string) => (ipv4(s) === null ? null : ipv4Bits(s))),
};
