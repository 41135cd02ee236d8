/**
 * A SQL function written in JavaScript and registered with DuckDB: the one loop every such function needs
 * over a chunk's rows. DuckDB answers null for a null argument without calling it (no special handling).
 */
import { BIGINT, type DuckDBType, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';

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

/**
 * A function of an operation's name and its arguments as a JSON array, answering JSON text (or null).
 * With `stopsAtDeadline` it takes a third argument, the statement's deadline (sql/deadline.ts): a call
 * after it fails the statement, so a chunk of long calls ends at the time limit.
 */
export function jsonOpFunction(
  name: string,
  call: (op: string, args: unknown[]) => unknown,
  opts: { stopsAtDeadline?: boolean } = {},
): DuckDBScalarFunction {
  const answer = (op: unknown, args: unknown): string | null => {
    const result = call(String(op), JSON.parse(String(args)) as unknown[]);
    return result === null || result === undefined ? null : JSON.stringify(result);
  };
  if (!opts.stopsAtDeadline) return jsFunction<[string, string]>(name, [VARCHAR, VARCHAR], VARCHAR, answer);
  return jsFunction<[string, string, bigint]>(name, [VARCHAR, VARCHAR, BIGINT], VARCHAR, (op, args, deadline) => {
    if (deadline > 0n && Date.now() > Number(deadline)) throw new Error(`${name}: the statement's time limit passed`);
    return answer(op, args);
  });
}
