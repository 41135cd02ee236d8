/** Time helpers around nanosecond epoch values (bigint), the precision of _time. */

export const NS_PER_MS = 1_000_000n;

/** The nanosecond times a bound can be: what a signed 64-bit count holds (1677-09-21 to 2262-04-11), short of the two DuckDB keeps for infinity. */
const MIN_NS = -(2n ** 63n) + 2n;
const MAX_NS = 2n ** 63n - 2n;

/** A time past what nanoseconds hold (9999-12-31) as the furthest they do: it bounds the same events. */
export function clampNs(ns: bigint): bigint {
  return ns < MIN_NS ? MIN_NS : ns > MAX_NS ? MAX_NS : ns;
}

export function nowNs(): bigint {
  // Date.now() is ms; hrtime adds sub-ms resolution so that events received in the same ms keep order in _sysTime.
  const ms = BigInt(Date.now());
  const sub = process.hrtime.bigint() % NS_PER_MS;
  return ms * NS_PER_MS + sub;
}

/** RFC 3339 with nanoseconds, always UTC ("2024-01-01T00:00:00.123456789Z"). */
export function formatRfc3339Nano(ns: bigint): string {
  const ms = ns / NS_PER_MS;
  let rem = ns % NS_PER_MS;
  let msNum = Number(ms);
  if (rem < 0n) {
    rem += NS_PER_MS;
    msNum -= 1;
  }
  const iso = new Date(msNum).toISOString(); // 2024-01-01T00:00:00.123Z
  const fracNs = BigInt(iso.slice(20, 23)) * NS_PER_MS + rem;
  if (fracNs === 0n) return `${iso.slice(0, 19)}Z`;
  const frac = fracNs.toString().padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}.${frac}Z`;
}

/**
 * formatRfc3339Nano remembering its last few answers: a query's status names its datasets' first and last
 * times, the same from one query to the next until data arrives.
 */
export class RecentTimeTexts {
  private readonly times: bigint[] = [];
  private readonly texts: string[] = [];
  private next = 0;

  constructor(private readonly slots = 4) {}

  text(ns: bigint): string {
    const i = this.times.indexOf(ns);
    if (i >= 0) return this.texts[i]!;
    const text = formatRfc3339Nano(ns);
    this.times[this.next] = ns;
    this.texts[this.next] = text;
    this.next = (this.next + 1) % this.slots;
    return text;
  }
}

/** Parses RFC 3339 / ISO 8601 (any offset, up to ns precision) into epoch ns, or null. */
export function parseRfc3339Ns(text: string): bigint | null {
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d{1,9}))?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/.exec(
    text.trim(),
  );
  if (!m) {
    const dateOnly = /^(\d{4}-\d{2}-\d{2})$/.exec(text.trim());
    if (!dateOnly) return null;
    const ms = Date.parse(`${dateOnly[1]}T00:00:00Z`);
    return Number.isNaN(ms) ? null : BigInt(ms) * NS_PER_MS;
  }
  const time = m[2]!.length === 5 ? `${m[2]}:00` : m[2];
  let zone = m[4] ?? 'Z';
  if (zone === 'z') zone = 'Z';
  if (/^[+-]\d{2}$/.test(zone)) zone += ':00';
  if (/^[+-]\d{4}$/.test(zone)) zone = `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const ms = Date.parse(`${m[1]}T${time}${zone}`);
  if (Number.isNaN(ms)) return null;
  const frac = (m[3] ?? '').padEnd(9, '0');
  return BigInt(ms) * NS_PER_MS + BigInt(frac || '0');
}
