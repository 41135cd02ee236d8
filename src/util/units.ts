/** Parsers for the human units used in config and in the API (sizes, Go durations). Pure functions. */

const SIZE_UNITS: Record<string, number> = lookupTable({
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
});

/** "512MB", "1 GiB", "4096" or a number of bytes → bytes. Throws with the offending text. */
export function parseBytes(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new Error(`invalid size ${value}`);
    return Math.floor(value);
  }
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value);
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`invalid size "${value}" (expected e.g. 512MB, 1GiB or a byte count)`);
  return Math.floor(Number(m[1]) * unit);
}

const NS_PER_UNIT: Record<string, bigint> = lookupTable({
  ns: 1n,
  us: 1_000n,
  µs: 1_000n,
  μs: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
  // Not Go, but users of retention and trim think in days and weeks.
  d: 86_400_000_000_000n,
  w: 604_800_000_000_000n,
});

/**
 * Go's time.ParseDuration syntax ("1h30m", "1.5s", "300ms", "-2h"), plus d and w, → nanoseconds.
 * Axiom clients send Go duration strings (trim's maxDuration), so we accept exactly that grammar.
 */
import { lookupTable } from './lookup.js';
export function parseDuration(text: string): bigint {
  const s = text.trim();
  if (s === '0') return 0n;
  const m = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h|d|w))+$/.exec(s);
  if (!m) throw new Error(`invalid duration "${text}" (expected e.g. 90s, 1h30m, 7d)`);
  let total = 0n;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d|w)/g;
  for (let p = part.exec(s); p; p = part.exec(s)) {
    const [whole, frac = ''] = p[1]!.split('.');
    const unit = NS_PER_UNIT[p[2]!]!;
    total += BigInt(whole || '0') * unit;
    if (frac) total += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
  }
  return m[1] === '-' ? -total : total;
}
