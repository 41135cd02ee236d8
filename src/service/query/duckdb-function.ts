/**
 * A SQL function written in JavaScript and registered with DuckDB: the one loop every such function needs
 * over a chunk's rows, and the budget it keeps. DuckDB calls it on the service's one JavaScript thread,
 * once per chunk of rows (up to 2048), and no timer, request or signal is served while a call runs: so a
 * call's work is bounded (the time it holds the thread, the text it reads and makes), and what does not
 * fit fails the statement with a message naming the limit rather than stalling every other client.
 * Between calls the thread serves the others, and the statement's interrupt (time limit, shutdown) lands.
 * A row with a null argument is null without a call (DuckDB's answer for it whatever the function says).
 */
import { BIGINT, type DuckDBType, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { budgetMessage, type CallLimits, type JsBudget, OverBudget } from './js-budget.js';

export { type CallLimits, type JsBudget, OverBudget } from './js-budget.js';

const textLength = (v: unknown) => (typeof v === 'string' ? v.length : 0);

/**
 * A scalar function over a chunk: `fn` per row, with the budget kept around it. `aplName` is what the
 * user wrote (redact, hash_sha512, series_fir), for the messages.
 */
export function jsFunction<A extends unknown[]>(
  name: string,
  parameterTypes: DuckDBType[],
  returnType: DuckDBType,
  fn: (...args: A) => unknown,
  budget: JsBudget,
  aplName: string | ((args: A) => string) = name.replace(/^ferry_/, ''),
): DuckDBScalarFunction {
  return DuckDBScalarFunction.create({
    name,
    mainFunction: (_info, input, output) => {
      const started = performance.now();
      let chars = 0;
      let args: A | undefined;
      const fail = (what: Parameters<typeof budgetMessage>[1]): never => {
        throw new Error(budgetMessage(typeof aplName === 'string' ? aplName : aplName(args!), what, budget));
      };
      const limits: CallLimits = {
        maxChars: budget.valueChars,
        overtime: () => performance.now() - started > budget.chunkMs,
      };
      const columns = parameterTypes.map((_, c) => input.getColumnVector(c));
      for (let i = 0; i < input.rowCount; i++) {
        args = columns.map((v) => v.getItem(i)) as A;
        // DuckDB's answer for a null argument is null whatever the function says: not worth calling.
        if (args.includes(null)) {
          output.setItem(i, null);
          continue;
        }
        for (const a of args) {
          const n = textLength(a);
          if (n > budget.valueChars) fail('input');
          chars += n;
        }
        let result: unknown;
        current = limits;
        try {
          result = fn(...args);
        } catch (e) {
          // V8 refuses a string past its own limit with a RangeError: the value budget, reached another way.
          if (e instanceof OverBudget) fail(e.what);
          if (e instanceof RangeError && /string length/i.test(e.message)) fail('value');
          throw e;
        } finally {
          current = UNLIMITED;
        }
        const n = textLength(result);
        if (n > budget.valueChars) fail('value');
        chars += n;
        if (chars > budget.chunkChars) fail('chunk');
        if (limits.overtime()) fail('time');
        output.setItem(i, result === undefined ? null : (result as never));
      }
      output.flush();
    },
    returnType,
    parameterTypes,
  });
}

const UNLIMITED: CallLimits = { maxChars: Infinity, overtime: () => false };
let current: CallLimits = UNLIMITED;

/** The limits of the JavaScript function call running now (none outside one). */
export function callLimits(): CallLimits {
  return current;
}

/**
 * A function of an operation's name and its arguments as a JSON array, answering JSON text (or null).
 * `prefix` names the APL functions it serves (series_ + op). With `stopsAtDeadline` it takes a third
 * argument, the statement's deadline (sql/deadline.ts): a call after it fails the statement.
 */
export function jsonOpFunction(
  name: string,
  prefix: string,
  call: (op: string, args: unknown[]) => unknown,
  budget: JsBudget,
  opts: { stopsAtDeadline?: boolean } = {},
): DuckDBScalarFunction {
  const answer = (op: unknown, args: unknown): string | null => {
    const result = call(String(op), JSON.parse(String(args)) as unknown[]);
    return result === null || result === undefined ? null : JSON.stringify(result);
  };
  const aplName = (args: unknown[]) => `${prefix}${String(args[0])}`;
  if (!opts.stopsAtDeadline)
    return jsFunction<[string, string]>(name, [VARCHAR, VARCHAR], VARCHAR, answer, budget, aplName);
  return jsFunction<[string, string, bigint]>(
    name,
    [VARCHAR, VARCHAR, BIGINT],
    VARCHAR,
    (op, args, deadline) => {
      if (deadline > 0n && Date.now() > Number(deadline))
        throw new Error(`${prefix}${op}: the statement's time limit passed`);
      return answer(op, args);
    },
    budget,
    aplName,
  );
}
