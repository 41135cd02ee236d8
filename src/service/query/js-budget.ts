/**
 * The budget of a JavaScript function inside a query (./duckdb-function.ts keeps it): what one call may
 * read, make and take of the service's one thread. Apart from the function loop so that the config can
 * name its defaults without loading DuckDB (a remote-only agent never does).
 */
import { readOptions } from '../../config/options.js';
import { QUERY_LIMIT_OPTIONS, type QueryLimitValues } from './limits.js';

/** What one JavaScript function may do: per value it reads or makes, and per call (a chunk of rows). */
export interface JsBudget {
  /** The longest text one argument or one result may be, in characters (service.query_limits.max_js_value_bytes). */
  valueChars: number;
  /** Text read and made by one call, all rows together (service.query_limits.max_js_chunk_bytes). */
  chunkChars: number;
  /** Milliseconds one call may hold the thread (service.query_limits.max_js_chunk_time). */
  chunkMs: number;
}

/** The budget from the `service.query_limits` keys' values (a call gets at least a millisecond). */
export function jsBudgetOf(v: QueryLimitValues): JsBudget {
  return {
    valueChars: v.max_js_value_bytes,
    chunkChars: v.max_js_chunk_bytes,
    chunkMs: Math.max(1, v.max_js_chunk_time),
  };
}

/** The budget unless configured, as declared (limits.ts gives the reasons for the defaults). */
export const DEFAULT_JS_BUDGET: JsBudget = jsBudgetOf(readOptions(QUERY_LIMIT_OPTIONS, {}, 'query_limits'));

/** What the call running now may still do: a function with a long inner loop asks it as it goes. */
export interface CallLimits {
  /** The longest text the function may make. */
  maxChars: number;
  /** Whether the call has held the thread past its time. */
  overtime(): boolean;
}

/**
 * A function that stops itself (its text would grow past `maxChars`, or `overtime()` said so) throws this;
 * the loop turns it into the budget's message with the function's name and the limit's key.
 */
export class OverBudget extends Error {
  constructor(readonly what: 'value' | 'time') {
    super(`over the ${what} budget`);
  }
}

/** An amount of text for a message: KiB, MiB or GiB. */
export function sizeText(n: number): string {
  if (n >= 1024 ** 3) return `${+(n / 1024 ** 3).toFixed(1)} GiB`;
  return n >= 1024 * 1024 ? `${+(n / (1024 * 1024)).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`;
}

/** The message a statement fails with: what ran over, the limit and its key, and what to do instead. */
export function budgetMessage(fn: string, what: 'input' | 'value' | 'chunk' | 'time', b: JsBudget): string {
  switch (what) {
    case 'input':
      return `${fn}: an argument is longer than the ${sizeText(b.valueChars)} one value computed in JavaScript may read (service.query_limits.max_js_value_bytes); shorten the values first (substring)`;
    case 'value':
      return `${fn}: a result would be longer than the ${sizeText(b.valueChars)} one value computed in JavaScript may be (service.query_limits.max_js_value_bytes)`;
    case 'chunk':
      return `${fn}: one batch of rows reads and makes more than ${sizeText(b.chunkChars)} of text (service.query_limits.max_js_chunk_bytes); filter the rows or shorten the values first`;
    case 'time':
      return `${fn}: one batch of rows held the service's JavaScript thread over ${b.chunkMs} ms (service.query_limits.max_js_chunk_time); filter the rows or shorten the values first`;
  }
}
