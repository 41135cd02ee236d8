/**
 * Hashes DuckDB does not have, as SQL functions written in JavaScript: ferry_sha512(text) with node:crypto,
 * and ferry_xxhash64(text, seed) with xxhash-wasm (a maintained WebAssembly build of xxHash, so no native
 * addon to compile), which is APL's hash(): a signed 64-bit xxHash of the value's text.
 */
import { createHash } from 'node:crypto';
import { BIGINT, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import xxhash from 'xxhash-wasm';

export async function hashFunctions(): Promise<DuckDBScalarFunction[]> {
  const { h64 } = await xxhash();
  return [
    DuckDBScalarFunction.create({
      name: 'ferry_sha512',
      mainFunction: (_info, input, output) => {
        const v = input.getColumnVector(0);
        for (let i = 0; i < input.rowCount; i++) {
          const s = v.getItem(i);
          output.setItem(i, s === null ? null : createHash('sha512').update(String(s)).digest('hex'));
        }
        output.flush();
      },
      returnType: VARCHAR,
      parameterTypes: [VARCHAR],
    }),
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
