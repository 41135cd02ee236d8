/**
 * A SQL function written in JavaScript and registered with DuckDB: the one loop every such function needs
 * over a chunk's rows. DuckDB answers null for a null argument without calling it (no special handling).
 */
import { type DuckDBType, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';

export function jsFunction<A extends unknown[]>(
  name: string,
  parameterTypes: DuckDBType[],
  returnType: DuckDBType,
  fn: (...args: A) => unknown,
): DuckDBScalarFunction {
  return DuckDBScalarFunction.create({
    name,
    mainFunction: (_info, input, output) => {
      const columns = parameterTypes.map((_, c) => input.getColumnVector(c));
      for (let i = 0; i < input.rowCount; i++) {
        const result = fn(...(columns.map((v) => v.getItem(i)) as A));
        output.setItem(i, result === undefined ? null : (result as never));
      }
      output.flush();
    },
    returnType,
    parameterTypes,
  });
}

/** A function of an operation's name and its arguments as a JSON array, answering JSON text (or null). */
export function jsonOpFunction(name: string, call: (op: string, args: unknown[]) => unknown): DuckDBScalarFunction {
  return jsFunction<[string, string]>(name, [VARCHAR, VARCHAR], VARCHAR, (op, args) => {
    const result = call(String(op), JSON.parse(String(args)) as unknown[]);
    return result === null || result === undefined ? null : JSON.stringify(result);
  });
}
