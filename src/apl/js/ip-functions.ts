/**
 * IPv4 functions for event pipelines, meaning what ../functions/ip.ts's SQL means: an address is a number
 * (a text `a.b.c.d` with octets up to 255, optionally `/n`; a long between 0 and 2^32-1), a text's `/n`
 * its prefix (32 without one, null past 32), and a comparison uses the shortest prefix in play.
 */
import type { AplType } from '../types.js';
import { fixed, type JsFunction } from './function-kit.js';
import { typeOfValue, type Value } from './values.js';

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

export const IP_JS_FUNCTIONS: Record<string, JsFunction> = {
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
