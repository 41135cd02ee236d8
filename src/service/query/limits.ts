import { MAX_DEPTH } from '../../apl/parser/parser.js';

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
}

/**
 * DuckDB's planner refuses plans deeper than 1000 nodes, and thousands of computed columns run out of
 * memory (docs/benchmarks.md). The defaults stay clear of both, and above the widest
 * dataset (service.max_fields_per_dataset, 2048) with its built-in columns. DuckDB plans a nested
 * expression in time that grows faster than its terms and cannot be interrupted while it does
 * (docs/benchmarks.md): the terms' default keeps a plan under a second.
 */
export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxQueryBytes: 256 * 1024,
  maxStages: 200,
  maxColumns: 2100,
  maxExpressionDepth: MAX_EXPRESSION_DEPTH,
  maxExpressionTerms: 5_000,
  maxResultBytes: 32 * 1024 * 1024,
};
