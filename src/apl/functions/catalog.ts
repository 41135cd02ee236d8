/**
 * The contract between binder and compiler for functions and operators: the binder asks `returns` for the
 * result type (and gets an Error naming the problem for bad arguments); the compiler asks `sql` for the
 * DuckDB expression. One entry per APL function or operator keeps both halves of a feature together.
 */
import type { LiteralValue } from '../parser/ast.js';
import type { AplType, DynamicShape } from '../types.js';
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

/** What the binder reads of any function alike: how an unnamed call's column is named, what it holds. */
export interface FunctionMeta {
  /**
   * How an unnamed call's column is named when its first argument is a column: after the argument
   * (`tostring(method)` → method), by a rule of the function's (`strlen(status)` → strlen_status), or, by
   * default, `Column1`, `Column2`… as Axiom's language service names them.
   */
  resultName?: 'argument' | ((argument: string) => string);
  /** What a dynamic result holds (an array, a dictionary), for its column's wire type. */
  shape?: DynamicShape;
}

/**
 * A value of the query rather than of a row that a function reads: `now` (one instant for the whole query)
 * or `binAuto` (the bin size chosen from the query's time range). The binder passes it as a constant
 * argument before the caller's, so `returns`, `sql` and `fold` see it as their first argument.
 */
export type QueryValue = 'now' | 'binAuto';

export interface ScalarFunction extends FunctionMeta {
  /** How many arguments the caller writes (a `reads` value is not counted). */
  minArgs: number;
  maxArgs: number;
  reads?: QueryValue;
  returns(args: ArgInfo[], ctx: TypeContext): AplType;
  sql(args: SqlArg[], ctx: SqlContext): string;
  /**
   * The value of a call whose arguments are all constants, computed at bind time: `ago(1h)` becomes a
   * timestamp constant, which DuckDB compares against row groups' min/max to skip them.
   */
  fold?(values: LiteralValue[]): LiteralValue;
  /**
   * The most bytes one call's value may hold, from what its arguments may (../binder/made-text.ts): set by
   * a function that can make more than its arguments hold together (strrep, replace, an encoding). Unset,
   * a text is no longer than its arguments together, and a dynamic value no longer than its arguments with
   * their texts quoted as JSON strings. Undefined when a count read from the rows sets it (range's length
   * from columns, strrep's repetitions): the call's SQL then checks each row against the query's row share
   * (../../sql/row-share.ts).
   */
  madeBytes?(args: SizedArg[]): number | undefined;
  /** The most bytes one element of the array a call makes may hold (range: a number), when less than the whole. */
  elementBytes?(args: SizedArg[]): number;
}

/** What the estimate of the text a call makes knows of an argument: its longest value in bytes, and the value itself when constant. */
export interface SizedArg {
  bytes: number;
  type: AplType;
  constant?: { value: LiteralValue };
}

export interface AggregateFunction extends FunctionMeta {
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
  /** The constant argument whose value ends an unnamed column's name (`percentile(x, 95)` → percentile_x_95). */
  namedConstant?: number;
  returns(args: ArgInfo[], ctx: TypeContext): AplType;
  sql(args: SqlArg[]): string;
}

export class ArgumentError extends Error {}
