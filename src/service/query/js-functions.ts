/**
 * SQL functions written in JavaScript, for what DuckDB does not have: ferry_sha512(text) with node:crypto;
 * ferry_xxhash64(text, seed) with xxhash-wasm (a maintained WebAssembly build of xxHash, so no native
 * addon to compile), which is APL's hash(); ferry_parse_csv(text) with csv-parse, the CSV reader ingest
 * uses; ferry_json_sorted(json), JSON with its keys sorted at every depth (dynamic_to_json);
 * ferry_ipv6_compare(a, b, prefix), the order of two IPv6 (or IPv4) addresses over their common prefix.
 * ferry_cursor(time_ns, seq) encodes an event's cursor as query results give it (cursor_current).
 * ferry_redact(text, options) masks what redact's patterns match (apl/functions/redact.ts).
 * DuckDB answers null for a null argument without calling a function, so each takes its arguments as given.
 */
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import { BIGINT, type DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { parse as parseCsv } from 'csv-parse/sync';
import xxhash from 'xxhash-wasm';
import { redactor, type RedactOptions } from '../../apl/functions/redact.js';
import { encodeCursor } from './cursor.js';
import { callLimits, jsFunction, type JsBudget, OverBudget } from './duckdb-function.js';

/** The fields of the first record of a line of CSV, as a JSON array of strings; null when it does not parse. */
export function csvFields(text: string): string | null {
  try {
    const records = parseCsv(text, { relax_quotes: true, relax_column_count: true }) as string[][];
    return JSON.stringify(records[0] ?? []);
  } catch {
    return null;
  }
}

/** JSON text with every object's keys in order, so equal values have equal text. */
export function sortedJson(text: string): string | null {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
    );
  };
  try {
    return JSON.stringify(sort(JSON.parse(text)));
  } catch {
    return null;
  }
}

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

/** The limits redact keeps as it masks: the running call's, failing with the budget's error. */
function redactLimits() {
  const limits = callLimits();
  return {
    maxChars: limits.maxChars,
    overtime: limits.overtime,
    stop: (what: 'value' | 'time') => new OverBudget(what),
  };
}

export async function jsFunctions(budget: JsBudget): Promise<DuckDBScalarFunction[]> {
  const { h64 } = await xxhash();
  /** A function of one text argument whose answer is text (or null). */
  const textFunction = (name: string, aplName: string, fn: (s: string) => string | null) =>
    jsFunction<[string]>(name, [VARCHAR], VARCHAR, (s) => fn(String(s)), budget, aplName);
  let redaction: { json: string; redact: ReturnType<typeof redactor> } | undefined;
  return [
    textFunction('ferry_parse_csv', 'parse_csv', csvFields),
    textFunction('ferry_json_sorted', 'dynamic_to_json', sortedJson),
    textFunction('ferry_sha512', 'hash_sha512', (s) => createHash('sha512').update(s).digest('hex')),
    jsFunction<[bigint, bigint]>(
      'ferry_cursor',
      [BIGINT, BIGINT],
      VARCHAR,
      (t, seq) => encodeCursor({ timeNs: BigInt(t), seq: BigInt(seq) }),
      budget,
      'cursor_current',
    ),
    // The options are the same constant on every row: parsed and compiled once.
    jsFunction<[string, string]>(
      'ferry_redact',
      [VARCHAR, VARCHAR],
      VARCHAR,
      (text, options) => {
        if (redaction?.json !== options)
          redaction = { json: options, redact: redactor(JSON.parse(options) as RedactOptions) };
        return redaction.redact(String(text), redactLimits());
      },
      budget,
      'redact',
    ),
    jsFunction<[string, string, bigint]>(
      'ferry_ipv6_compare',
      [VARCHAR, VARCHAR, BIGINT],
      BIGINT,
      (a, b, prefix) => {
        const order = compareIpv6(String(a), String(b), Number(prefix));
        return order === null ? null : BigInt(order);
      },
      budget,
      'ipv6_compare',
    ),
    jsFunction<[string, bigint]>(
      'ferry_xxhash64',
      [VARCHAR, BIGINT],
      BIGINT,
      (s, seed) => BigInt.asIntN(64, h64(String(s), BigInt.asUintN(64, BigInt(seed)))),
      budget,
      'hash',
    ),
  ];
}
