/**
 * SQL functions written in JavaScript, for what DuckDB does not have: ferry_sha512(text) with node:crypto;
 * ferry_xxhash64(text, seed) with xxhash-wasm (a maintained WebAssembly build of xxHash, so no native
 * addon to compile), which is APL's hash(); ferry_parse_csv(text) with csv-parse, the CSV reader ingest
 * uses; ferry_json_sorted(json), JSON with its keys sorted at every depth (dynamic_to_json).
 */
import { createHash } from 'node:crypto';
import { BIGINT, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { parse as parseCsv } from 'csv-parse/sync';
import xxhash from 'xxhash-wasm';

/** A function of one text argument whose answer is text (or null). */
function textFunction(name: string, fn: (s: string) => string | null): DuckDBScalarFunction {
  return DuckDBScalarFunction.create({
    name,
    mainFunction: (_info, input, output) => {
      const v = input.getColumnVector(0);
      for (let i = 0; i < input.rowCount; i++) {
        const s = v.getItem(i);
        output.setItem(i, s === null ? null : fn(String(s)));
      }
      output.flush();
    },
    returnType: VARCHAR,
    parameterTypes: [VARCHAR],
  });
}

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

export async function jsFunctions(): Promise<DuckDBScalarFunction[]> {
  const { h64 } = await xxhash();
  return [
    textFunction('ferry_parse_csv', csvFields),
    textFunction('ferry_json_sorted', sortedJson),
    textFunction('ferry_sha512', (s) => createHash('sha512').update(s).digest('hex')),
    DuckDBScalarFunction.create({
      name: 'ferry_xxhash64',
      mainFunction: (_info, input, output) => {
        const text = input.getColumnVector(0);
        const seed = input.getColumnVector(1);
        for (let i = 0; i < input.rowCount; i++) {
          const s = text.getItem(i);
          const salt = seed.getItem(i);
          output.setItem(
            i,
            s === null
              ? null
              : BigInt.asIntN(64, h64(String(s), BigInt.asUintN(64, BigInt((salt as bigint | null) ?? 0n)))),
          );
        }
        output.flush();
      },
      returnType: BIGINT,
      parameterTypes: [VARCHAR, BIGINT],
    }),
  ];
}
