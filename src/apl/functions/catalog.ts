/**
 * The contract between binder and compiler for functions and operators: the binder asks `returns` for the
 * result type (and gets an Error naming the problem for bad arguments); the compiler asks `sql` for the
 * DuckDB expression. One entry per APL function or operator keeps both halves of a feature together.
 */
import type { LiteralValue } from '../parser/ast.js';
import type { AplType } from '../types.js';
import type { SqlArg } from './sql.js';

/** What the binder knows about an argument. */
export interface ArgInfo {
  type: AplType;
  constant?: { value: LiteralValue };
  /** The argument's column name, when it is a plain column (aggregate naming, agg.fields). */
  column?: string;
}

export interface TypeContext {
  /** `set stricttypes`: no implicit conversion of strings to numbers. */
  strict: boolean;
}

export interface SqlContext {
  /**
   * The expression is a `where` predicate (or an and/or operand of one): a NULL result drops the row just
   * as false does, so predicates may skip the COALESCE that exact three-valued results need. Keeping
   * comparisons bare lets DuckDB prune row groups with their min/max statistics.
   */
  filter: boolean;
}

export interface ScalarFunction {
  minArgs: number;
  maxArgs: number;
  returns(args: ArgInfo[], ctx: TypeContext): AplType;
  sql(args: SqlArg[], ctx: SqlContext): string;
}

export interface AggregateFunction {
  minArgs: number;
  maxArgs: number;
  /** `agg.name` in tabular results. */
  op: string;
  /** Output name: `<prefix>_<argument name>` (count() → count_). */
  prefix: string;
  /** Which arguments are constants (percentile's p, topk's k), named in agg.args and in the column name. */
  constantArgs?: number[];
  /** Which arguments are predicates (countif), not named in agg.fields. */
  predicateArgs?: number[];
  returns(args: ArgInfo[], ctx: TypeContext): AplType;
  sql(args: SqlArg[]): string;
}

export class ArgumentError extends Error {}
