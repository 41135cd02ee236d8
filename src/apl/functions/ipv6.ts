/**
 * IPv6 addresses as 128-bit numbers, for the ipv6_* functions: the store's ferry_ipv6_compare
 * (service/query/js-functions.ts) and event pipelines (../js/ip-functions.ts) compare with this one code.
 */
import { isIPv4, isIPv6 } from 'node:net';

const ALL_BITS = (1n << 128n) - 1n;

/** An IPv6 address (or an IPv4 one, as ::ffff:a.b.c.d) with an optional /prefix: its 128 bits and prefix length. */
export function parseIpv6(text: string): { value: bigint; bits: number } | null {
  let s = text.trim();
  let bits: number | undefined;
  const slash = s.indexOf('/');
  if (slash >= 0) {
    const suffix = s.slice(slash + 1);
    if (!/^\d{1,3}$/.test(suffix)) return null;
    bits = Number(suffix);
    s = s.slice(0, slash);
  }
  if (isIPv4(s)) {
    if (bits !== undefined && bits > 32) return null;
    const v4 = s.split('.').reduce((acc, o) => acc * 256n + BigInt(o), 0n);
    return { value: (0xffffn << 32n) | v4, bits: bits === undefined ? 128 : bits + 96 };
  }
  s = s.replace(/%.*$/, '');
  if (!isIPv6(s) || (bits !== undefined && bits > 128)) return null;
  const groups = (part: string): bigint[] => {
    if (part === '') return [];
    return part.split(':').flatMap((g) => {
      if (!g.includes('.')) return [BigInt(`0x${g}`)];
      const v4 = g.split('.').reduce((acc, o) => acc * 256n + BigInt(o), 0n);
      return [v4 >> 16n, v4 & 0xffffn];
    });
  };
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const front = groups(head!);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...Array<bigint>(8 - front.length - back.length).fill(0n), ...back];
  return { value: all.reduce((acc, g) => (acc << 16n) | g, 0n), bits: bits ?? 128 };
}

/** -1, 0 or 1 for two addresses over the shortest of their prefixes and `prefix`; null when one is not an address. */
export function compareIpv6(a: string, b: string, prefix: number | null): number | null {
  const x = parseIpv6(a);
  const y = parseIpv6(b);
  if (!x || !y || (prefix !== null && (prefix < 0 || prefix > 128))) return null;
  const bits = Math.min(x.bits, y.bits, prefix ?? 128);
  const mask = ALL_BITS ^ ((1n << BigInt(128 - bits)) - 1n);
  const p = x.value & mask;
  const q = y.value & mask;
  return p < q ? -1 : p > q ? 1 : 0;
}
