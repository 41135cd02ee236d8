/**
 * IP address functions. IPv4 addresses are numbers in SQL (the ferry_ipv4 and ferry_ipv4_bits macros,
 * ./macros.ts); an address written with /n carries its own prefix, and a comparison uses the shortest
 * prefix in play. IPv6 addresses are compared by a JavaScript function registered with DuckDB
 * (service/query/js-functions.ts). geo_info_from_ip_address is another (service/query/geoip.ts).
 */
import type { ScalarFunction } from './catalog.js';
import { castTo, fixed } from './define.js';
import { asStringSql, bindSql, toDynamicSql, type SqlArg } from './sql.js';
import { lookupTable } from '../../util/lookup.js';

/** An IPv4 address as a number: a string ("10.1.2.3", "10.1.2.3/24") or a long; null when not one. */
const v4 = (a: SqlArg) =>
  a.type === 'long'
    ? `(CASE WHEN ${a.sql} BETWEEN 0 AND 4294967295 THEN ${a.sql} END)`
    : `ferry_ipv4(${asStringSql(a)})`;

/** The prefix length an IPv4 argument carries: its /n, or 32. */
const bits4 = (a: SqlArg) => (a.type === 'long' ? '32' : `ferry_ipv4_bits(${asStringSql(a)})`);

/** The network part of an address over `bits` (0-32), as a comparable number. */
const network = (n: string, bits: string) => `(${n} >> (32 - ${bits}))`;

/** The address with its host bits (past `bits`) cleared. */
const masked = (n: string, bits: string) => `((${n} >> (32 - ${bits})) << (32 - ${bits}))`;

const dotted = (n: string) =>
  `(CAST(${n} >> 24 AS VARCHAR) || '.' || CAST((${n} >> 16) % 256 AS VARCHAR) || '.' || CAST((${n} >> 8) % 256 AS VARCHAR) || '.' || CAST(${n} % 256 AS VARCHAR))`;

/** The prefix a comparison uses: the shortest of both addresses' own and the one asked for (0-32). */
function commonBits(a: SqlArg, b: SqlArg, prefix: SqlArg | undefined): string {
  const p = prefix ? `(CASE WHEN ${castTo(prefix, 'long')} BETWEEN 0 AND 32 THEN ${castTo(prefix, 'long')} END)` : '32';
  return `least(${bits4(a)}, ${bits4(b)}, ${p})`;
}

function compare4Sql(a: SqlArg, b: SqlArg, prefix: SqlArg | undefined): string {
  const m = commonBits(a, b, prefix);
  const x = network(v4(a), m);
  const y = network(v4(b), m);
  return `(CASE WHEN ${x} < ${y} THEN -1 WHEN ${x} > ${y} THEN 1 WHEN ${x} = ${y} THEN 0 END)`;
}

/** Whether `ip` lies in `range` ("10.0.0.0/8"; an address alone is a range of one). */
const inRange4 = (ip: string, range: string) =>
  `(ferry_ipv4(${ip}) >> (32 - ferry_ipv4_bits(${range})) = ferry_ipv4(${range}) >> (32 - ferry_ipv4_bits(${range})))`;

/** The texts listed after the first argument: one dynamic array of them, or several arguments. */
function listed(args: SqlArg[]): string {
  if (args.length === 1 && args[0]!.type === 'dynamic') return `TRY_CAST(${toDynamicSql(args[0]!)} AS VARCHAR[])`;
  return `[${args.map(asStringSql).join(', ')}]`;
}

/** The IPv4 addresses written in a text, each standing alone (not inside a longer run of digits and dots). */
const addressesIn = (s: string) =>
  `list_filter(regexp_extract_all(${s}, '\\b\\d{1,3}(?:\\.\\d{1,3}){3}\\b'), x -> ferry_ipv4(x) IS NOT NULL)`;

/** A prefix has_ipv4_prefix takes: a whole address, or one to three octets ending with a dot. */
const validPrefix = (p: string) => `(ferry_ipv4(${p}) IS NOT NULL OR regexp_full_match(${p}, '(\\d{1,3}\\.){1,3}'))`;

function anyAddress(source: SqlArg, items: string, test: (address: string, item: string) => string): string {
  return bindSql(
    { a: addressesIn(asStringSql(source)), r: items },
    (v) =>
      `COALESCE(list_bool_or(list_transform(${v.a}, x -> list_bool_or(list_transform(${v.r}, r -> ${test('x', 'r')})))), FALSE)`,
  );
}

const ipv6Compare = (a: SqlArg, b: SqlArg, prefix?: SqlArg) =>
  `ferry_ipv6_compare(${asStringSql(a)}, ${asStringSql(b)}, ${prefix ? castTo(prefix, 'long') : '128'})`;

export const IP_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  // An offline GeoIP lookup with the keys Axiom documents (service/query/geoip.ts).
  geo_info_from_ip_address: {
    shape: 'dictionary',
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'dynamic',
    sql: ([ip]) => `CAST(ferry_geo_info(${asStringSql(ip!)}) AS JSON)`,
  },
  parse_ipv4: fixed('long', ['string'], ([s]) => masked(`ferry_ipv4(${s})`, `ferry_ipv4_bits(${s})`)),
  parse_ipv4_mask: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'long',
    sql: ([ip, p]) => masked(v4(ip!), commonBits(ip!, ip!, p)),
  },
  ipv4_is_in_range: fixed('bool', ['string', 'string'], ([ip, range]) => inRange4(ip!, range!)),
  ipv4_is_in_any_range: {
    minArgs: 2,
    maxArgs: 64,
    returns: () => 'bool',
    sql: ([ip, ...ranges]) =>
      `list_bool_or(list_transform(${listed(ranges)}, r -> ${inRange4(asStringSql(ip!), 'r')}))`,
  },
  ipv4_is_private: fixed(
    'bool',
    ['string'],
    ([s]) => `(regexp_full_match(${s}, '(10\\.\\d+|172\\.(1[6-9]|2\\d|3[01])|192\\.168)\\.\\d+\\.\\d+'))`,
  ),
  ipv4_compare: { minArgs: 2, maxArgs: 3, returns: () => 'long', sql: ([a, b, p]) => compare4Sql(a!, b!, p) },
  ipv4_is_match: {
    minArgs: 2,
    maxArgs: 3,
    returns: () => 'bool',
    sql: ([a, b, p]) => `(${compare4Sql(a!, b!, p)} = 0)`,
  },
  ipv4_netmask_suffix: fixed(
    'long',
    ['string'],
    ([s]) => `(CASE WHEN ferry_ipv4(${s}) IS NOT NULL THEN ferry_ipv4_bits(${s}) END)`,
  ),
  // "" when the value is not an address (KQL).
  format_ipv4: {
    minArgs: 1,
    maxArgs: 2,
    returns: () => 'string',
    sql: ([ip, p]) => `COALESCE(${dotted(masked(v4(ip!), commonBits(ip!, ip!, p)))}, '')`,
  },
  format_ipv4_mask: {
    minArgs: 1,
    maxArgs: 2,
    returns: () => 'string',
    sql: ([ip, p]) => {
      const m = commonBits(ip!, ip!, p);
      return `COALESCE(${dotted(masked(v4(ip!), m))} || '/' || CAST(${m} AS VARCHAR), '')`;
    },
  },
  has_ipv4: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'bool',
    sql: ([s, ip]) =>
      `(ferry_ipv4(${asStringSql(ip!)}) IS NOT NULL AND list_contains(${addressesIn(asStringSql(s!))}, ${asStringSql(ip!)}))`,
  },
  has_ipv4_prefix: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'bool',
    sql: ([s, p]) => {
      const prefix = asStringSql(p!);
      return `(${validPrefix(prefix)} AND ${anyAddress(s!, `[${prefix}]`, (x, r) => `starts_with(${x}, ${r})`)})`;
    },
  },
  // Addresses, or ranges ("10.0.0.0/8"), listed as arguments or in one dynamic array.
  has_any_ipv4: {
    minArgs: 2,
    maxArgs: 64,
    returns: () => 'bool',
    sql: ([s, ...items]) => anyAddress(s!, listed(items), (x, r) => inRange4(x, r)),
  },
  has_any_ipv4_prefix: {
    minArgs: 2,
    maxArgs: 64,
    returns: () => 'bool',
    sql: ([s, ...items]) => anyAddress(s!, listed(items), (x, r) => `(${validPrefix(r)} AND starts_with(${x}, ${r}))`),
  },
  ipv6_compare: { minArgs: 2, maxArgs: 3, returns: () => 'long', sql: ([a, b, p]) => ipv6Compare(a!, b!, p) },
  ipv6_is_match: {
    minArgs: 2,
    maxArgs: 3,
    returns: () => 'bool',
    sql: ([a, b, p]) => `(${ipv6Compare(a!, b!, p)} = 0)`,
  },
  ipv6_is_in_range: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'bool',
    sql: ([ip, range]) => `(${ipv6Compare(ip!, range!)} = 0)`,
  },
  ipv6_is_in_any_range: {
    minArgs: 2,
    maxArgs: 64,
    returns: () => 'bool',
    sql: ([ip, ...ranges]) =>
      `list_bool_or(list_transform(${listed(ranges)}, r -> ferry_ipv6_compare(${asStringSql(ip!)}, r, 128) = 0))`,
  },
});
