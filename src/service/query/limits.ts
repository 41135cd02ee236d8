import { MAX_DEPTH } from '../../apl/parser/parser.js';
import { bytes, duration, int, readOptions, type OptionSpecs, type Values } from '../../config/options.js';

/** The highest service.query_limits.max_expression_depth: the parser's own cap, which keeps its recursion and the binder's off the stack's limit. */
export const MAX_EXPRESSION_DEPTH = MAX_DEPTH;

/** Bounds on one query (service.query_limits), each refused with a 400 naming its config key. */
export interface QueryLimits {
  /** service.query_limits.max_query_bytes: the APL text's size. */
  maxQueryBytes: number;
  /** service.query_limits.max_stages: tabular operators in the whole query, subqueries included. */
  maxStages: number;
  /** service.query_limits.max_columns: columns of any stage's output. */
  maxColumns: number;
  /** service.query_limits.max_expression_depth: nesting of expressions, dynamic literals and subqueries. */
  maxExpressionDepth: number;
  /** service.query_limits.max_expression_terms: terms of all the query's expressions, lets written out. */
  maxExpressionTerms: number;
  /** service.query_limits.max_result_bytes: the values one statement's result may hold. */
  maxResultBytes: number;
  /** service.query_limits.max_nested_summaries: summaries nested in one another. */
  maxNestedSummaries: number;
  /** service.query_limits.max_made_text_bytes: text a query's calls may make for a batch of rows, estimated. */
  maxMadeTextBytes: number;
}

/**
 * The keys of `service.query_limits`, declared once: the service's config and the engine's defaults read
 * them. DuckDB's planner refuses plans deeper than 1000 nodes, and thousands of computed columns run out
 * of memory (docs/benchmarks.md). The defaults stay clear of both, and above the widest dataset
 * (service.max_fields_per_dataset, 2048) with its built-in columns. DuckDB plans a nested expression in
 * time that grows faster than its terms and cannot be interrupted while it does (docs/benchmarks.md): the
 * terms' default keeps a plan under a second. The JavaScript budget's defaults keep one call under a
 * quarter of a second on a slow core (a regular expression over 4 MiB is the worst case) and a chunk's
 * text well inside DuckDB's memory_limit.
 */
export const QUERY_LIMIT_OPTIONS = {
  max_query_bytes: bytes('256KiB').doc('larger APL text is refused (400 naming this key)'),
  max_stages: int(200, { min: 1 }).doc(
    "tabular operators in a whole query, subqueries included (DuckDB's planner fails near 400)",
  ),
  max_columns: int(2100, { min: 1 }).doc('columns any stage of a query may make'),
  max_expression_depth: int(MAX_EXPRESSION_DEPTH, { min: 1, max: MAX_EXPRESSION_DEPTH }).doc(
    `nesting of expressions, \`dynamic\` literals and subqueries (at most ${MAX_EXPRESSION_DEPTH}, the parser's own cap), also once the lets an expression uses are written out`,
  ),
  max_expression_terms: int(5000, { min: 1 })
    .doc(
      "terms of all a query's expressions once every `let` is written out where it is used (`let v1 = v0 + v0; let v2 = v1 + v1; …` doubles with each line); DuckDB plans a nested expression in time growing faster than its size and cannot be interrupted meanwhile. A tabular `let` may be written out `max_stages` times",
    )
    .shown('`5000` (a list of constants counts once)'),
  max_nested_summaries: int(12, { min: 1 }).doc(
    'summaries (`summarize`, `count`, `make-series`) and `join kind=innerunique` nested in one another along any path of a query, subqueries included; DuckDB plans each level in twice the time of the one below and cannot be interrupted meanwhile (twenty nested summaries: a second)',
  ),
  max_made_text_bytes: bytes('128MiB').doc(
    "the text a query's functions may make for one batch of rows (DuckDB computes 2,048 at a time and holds what a batch's calls make outside `memory_limit`), estimated before the query runs from the longest value of each column read (DuckDB's statistics) and what each function may make of its arguments (`strcat` all but the longest, `strrep` its repetitions, `replace_regex` its rewrite at every match); a query that may make more is refused (400 naming this key and the call that makes the most). A copy of a column (`extract`, `tolower`, `parse_json`) counts only past the fourth of that column; a count read from the rows (`range(1, n)`, `strrep(s, n)`, `tohex(x, n)`) gets a share of what is left, checked row by row (400 at the first row over it)",
  ),
  max_result_bytes: bytes('32MiB').doc(
    "the values one result may hold (8 bytes a value, and a text's bytes besides), counted by DuckDB as it makes an APL query's rows, so a larger result is refused before it is held: a 400 naming this key",
  ),
  max_js_value_bytes: bytes('4MiB').doc(
    'the longest text (characters) a function computed in JavaScript may read as one argument or make as one value (`redact`, `phrases`, `spotlight`, `series_fir` and the other filters, `genai_*`, `geo_info_from_ip_address`, `hash_sha512`, `hash`, `parse_csv`, `dynamic_to_json`)',
  ),
  max_js_chunk_bytes: bytes('64MiB').doc(
    'the text such a function may read and make for one batch of rows (DuckDB hands over up to 2,048 at a time)',
  ),
  max_js_chunk_time: duration('250ms').doc(
    "how long such a function may hold the service's one JavaScript thread for one batch of rows; between batches every other request is served",
  ),
} satisfies OptionSpecs;

export type QueryLimitValues = Values<typeof QUERY_LIMIT_OPTIONS>;

/** The limits of the query engine from the keys' values. */
export function queryLimitsOf(v: QueryLimitValues): QueryLimits {
  return {
    maxQueryBytes: v.max_query_bytes,
    maxStages: v.max_stages,
    maxColumns: v.max_columns,
    maxExpressionDepth: v.max_expression_depth,
    maxExpressionTerms: v.max_expression_terms,
    maxResultBytes: v.max_result_bytes,
    maxNestedSummaries: v.max_nested_summaries,
    maxMadeTextBytes: v.max_made_text_bytes,
  };
}

/** The limits unless configured (tests, tools), as declared. */
export const DEFAULT_QUERY_LIMITS: QueryLimits = queryLimitsOf(readOptions(QUERY_LIMIT_OPTIONS, {}, 'query_limits'));
