/**
 * Calendar functions for event pipelines, meaning what ../functions/scalar.ts's SQL means through DuckDB:
 * datetimes are nanoseconds since the epoch (UTC); months are added as DuckDB adds an interval (the day
 * kept, or the month's last); differences count the boundaries of the part crossed.
 */
import { fixed, floorMod, NS_PER_DAY, utc, type Call, type JsFunction } from './function-kit.js';
import type { Ev } from './compile.js';

const FIXED_NS: Record<string, bigint> = {
  week: 604_800_000_000_000n,
  day: NS_PER_DAY,
  hour: 3_600_000_000_000n,
  minute: 60_000_000_000n,
  second: 1_000_000_000n,
  millisecond: 1_000_000n,
  microsecond: 1_000n,
  nanosecond: 1n,
};

const PARTS = new Set([
  'year',
  'quarter',
  'month',
  'week',
  'day',
  'hour',
  'minute',
  'second',
  'millisecond',
  'microsecond',
  'nanosecond',
]);

/** The date part a call names: a constant the binder has checked. */
function partOf(call: Call): string {
  const a = call.args[0]!;
  const v = a.k === 'lit' && typeof a.value === 'string' ? a.value.toLowerCase() : undefined;
  if (!v || !PARTS.has(v))
    throw new Error(`${call.fn}: the date part must be a constant, one of ${[...PARTS].join(', ')}`);
  return v;
}

/** A datetime's calendar date and the nanoseconds into its day. */
function split(ns: bigint): { y: number; m: number; d: number; inDay: bigint } {
  const date = utc(ns);
  return { y: date.getUTCFullYear(), m: date.getUTCMonth(), d: date.getUTCDate(), inDay: floorMod(ns, NS_PER_DAY) };
}

const daysIn = (y: number, m: number) => new Date(Date.UTC(y, m + 1, 0)).getUTCDate();

/** The datetime of a calendar date (month may run past 11 or below 0) and a time into the day. */
function at(y: number, m: number, d: number, inDay: bigint): bigint {
  const ms = Date.UTC(y, m, 1);
  const first = new Date(ms);
  const day = Math.min(d, daysIn(first.getUTCFullYear(), first.getUTCMonth()));
  return BigInt(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), day)) * 1_000_000n + inDay;
}

/**
 * Months added as DuckDB adds `to_months`: the same day, or the last of a shorter month, and the time
 * kept to the microsecond (an interval's arithmetic is in microseconds).
 */
function addMonths(ns: bigint, months: number): bigint {
  const { y, m, d, inDay } = split(ns);
  return at(y, m + months, d, inDay - floorMod(inDay, 1_000n));
}

/** The ISO week number (DuckDB's date_part('week')). */
function isoWeek(ns: bigint): number {
  const date = utc(ns);
  const day = (date.getUTCDay() + 6) % 7; // Monday 0
  const thursday = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() - day + 3);
  const yearStart = Date.UTC(new Date(thursday).getUTCFullYear(), 0, 1);
  return 1 + Math.floor((thursday - yearStart) / (7 * 86_400_000));
}

function partValue(part: string, ns: bigint): number {
  const date = utc(ns);
  switch (part) {
    case 'year':
      return date.getUTCFullYear();
    case 'quarter':
      return Math.floor(date.getUTCMonth() / 3) + 1;
    case 'month':
      return date.getUTCMonth() + 1;
    case 'week':
      return isoWeek(ns);
    case 'day':
      return date.getUTCDate();
    case 'hour':
      return date.getUTCHours();
    case 'minute':
      return date.getUTCMinutes();
    case 'second':
      return date.getUTCSeconds();
    default: {
      // Parts below the second count within the second.
      const inSecond = floorMod(ns, 1_000_000_000n);
      return Number(inSecond / FIXED_NS[part]!);
    }
  }
}

/** How many boundaries of `part` lie between `from` and `to` (DuckDB's date_diff). */
function boundaries(part: string, from: bigint, to: bigint): bigint {
  if (part === 'nanosecond') return to - from;
  const a = utc(from);
  const b = utc(to);
  switch (part) {
    case 'year':
      return BigInt(b.getUTCFullYear() - a.getUTCFullYear());
    case 'quarter':
      return BigInt(
        b.getUTCFullYear() * 4 +
          Math.floor(b.getUTCMonth() / 3) -
          (a.getUTCFullYear() * 4 + Math.floor(a.getUTCMonth() / 3)),
      );
    case 'month':
      return BigInt(b.getUTCFullYear() * 12 + b.getUTCMonth() - (a.getUTCFullYear() * 12 + a.getUTCMonth()));
    default: {
      // Time is counted in microseconds, as DuckDB's timestamps are.
      const unit = part === 'millisecond' ? 1_000_000n : part === 'microsecond' ? 1_000n : FIXED_NS[part]!;
      const floorDiv = (x: bigint) => (x - floorMod(x, unit)) / unit;
      const us = (x: bigint) => x - floorMod(x, 1_000n);
      return floorDiv(us(to)) - floorDiv(us(from));
    }
  }
}

/** startof… / endof… a day, week (from Sunday), month or year, with an offset in units. */
function startOf(unit: 'day' | 'week' | 'month' | 'year', end: boolean): JsFunction {
  return ({ args: [d, off] }, c) => {
    const dt = c.as(d!, 'datetime');
    const by = off ? c.as(off, 'long') : () => 0;
    return (row) => {
      const ns = dt(row) as bigint | null;
      const k = by(row) as number | null;
      if (ns === null || k === null) return null;
      const { y, m, inDay } = split(ns);
      const dayStart = ns - inDay;
      const startAt = (n: number): bigint =>
        unit === 'day'
          ? dayStart + BigInt(n) * NS_PER_DAY
          : unit === 'week'
            ? dayStart - BigInt(utc(ns).getUTCDay()) * NS_PER_DAY + BigInt(n * 7) * NS_PER_DAY
            : unit === 'month'
              ? at(y, m + n, 1, 0n)
              : at(y + n, 0, 1, 0n);
      return end ? startAt(Number(k) + 1) - 1n : startAt(Number(k));
    };
  };
}

export const TIME_JS_FUNCTIONS: Record<string, JsFunction> = {
  datetime_add: (call, c) => {
    const part = partOf(call);
    const n = c.as(call.args[1]!, 'long');
    const dt = c.as(call.args[2]!, 'datetime');
    return (row): ReturnType<Ev> => {
      const k = n(row) as number | null;
      const ns = dt(row) as bigint | null;
      if (k === null || ns === null) return null;
      const fixedNs = FIXED_NS[part];
      if (fixedNs) return ns + BigInt(k) * fixedNs;
      return addMonths(ns, part === 'year' ? Number(k) * 12 : part === 'quarter' ? Number(k) * 3 : Number(k));
    };
  },
  datetime_diff: (call, c) => {
    const part = partOf(call);
    const a = c.as(call.args[1]!, 'datetime');
    const b = c.as(call.args[2]!, 'datetime');
    return (row) => {
      const x = a(row) as bigint | null;
      const y = b(row) as bigint | null;
      if (x === null || y === null) return null;
      return Number(boundaries(part, y, x));
    };
  },
  datetime_part: (call, c) => {
    const part = partOf(call);
    const dt = c.as(call.args[1]!, 'datetime');
    return (row) => {
      const ns = dt(row) as bigint | null;
      return ns === null ? null : partValue(part, ns);
    };
  },
  dayofyear: fixed(['datetime'], (ns: bigint) => {
    const d = utc(ns);
    return (
      Math.floor(
        (Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - Date.UTC(d.getUTCFullYear(), 0, 1)) /
          86_400_000,
      ) + 1
    );
  }),
  week_of_year: fixed(['datetime'], (ns: bigint) => isoWeek(ns)),
  startofday: startOf('day', false),
  startofweek: startOf('week', false),
  startofmonth: startOf('month', false),
  startofyear: startOf('year', false),
  endofday: startOf('day', true),
  endofweek: startOf('week', true),
  endofmonth: startOf('month', true),
  endofyear: startOf('year', true),
};
