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
import { BIGINT, type DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import xxhash from 'xxhash-wasm';
import { redactor, type RedactOptions } from '../../apl/functions/redact.js';
import { compareIpv6 } from '../../apl/functions/ipv6.js';
import { csvFields, sortedJson } from '../../apl/functions/text-values.js';
import { encodeCursor } from './cursor.js';
import { callLimits, jsFunction, type JsBudget, OverBudget } from './duckdb-function.js';

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
