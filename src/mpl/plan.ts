/**
 * A bound MPL query (binder.ts's output, compiler.ts's input): parameters resolved, functions checked, time
 * ranges in whole seconds, offsets moved to the sources they shift. Positions stay where an error can only be
 * found once the series are known (an `extend` of a tag a series has).
 */

export type Scalar =
  | { type: 'string'; value: string }
  | { type: 'int'; value: number }
  | { type: 'float'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'null' };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

/** A test of a series' tags (`where`). */
export type TagTest =
  | { kind: 'all' }
  | { kind: 'and' | 'or'; parts: TagTest[] }
  | { kind: 'not'; test: TagTest }
  | { kind: 'compare'; tag: string; op: CompareOp; value: Scalar }
  | { kind: 'regex'; tag: string; pattern: string }
  | { kind: 'is'; tag: string; type: string }
  | { kind: 'in'; tag: string; values: Scalar[] }
  | { kind: 'contains'; tag: string; value: Scalar };

export type MapFn =
  | { kind: 'arith'; op: '+' | '-' | '*' | '/'; operand: number }
  | { kind: 'abs' | 'rate' | 'increase' | 'fill_prev' | 'interpolate' }
  | { kind: 'min' | 'max' | 'fill_const'; x: number }
  | { kind: 'filter' | 'is'; op: CompareOp; x: number };

export type AlignFn = 'avg' | 'sum' | 'min' | 'max' | 'count' | 'last' | 'rate';
export type GroupFn = 'avg' | 'sum' | 'min' | 'max' | 'count';
export type ComputeOp = '+' | '-' | '*' | '/' | 'min' | 'max' | 'avg';

/** What a bucket gives for each group and window: a quantile, or a statistic. */
export type BucketSpec = { quantile: number } | { stat: 'count' | 'avg' | 'sum' | 'min' | 'max' };

/** An `extend` value: a constant, or a text built from tags and constants (`"${host}:${port}"`). */
export type ExtendValue = Scalar | { parts: (string | { tag: string })[] };

export type Stage =
  | { kind: 'map'; fn: MapFn }
  /** `step` undefined: the whole range is one window. */
  | { kind: 'align'; step?: number; fn: AlignFn }
  | { kind: 'group'; by: string[]; fn: GroupFn }
  | {
      kind: 'bucket';
      by: string[];
      step?: number;
      fn: 'histogram' | 'delta' | 'cumulative';
      /** interpolate_cumulative_histogram's conversion of counts: per second, or per window. */
      mode?: 'rate' | 'increase';
      specs: BucketSpec[];
    }
  | { kind: 'as'; name: string }
  | { kind: 'extend'; tags: { name: string; value: ExtendValue; pos: number }[] };

/** A time range in whole seconds: [start, end). */
export interface Range {
  start: number;
  end: number;
}

export interface SourceBranch {
  kind: 'source';
  dataset: string;
  metric: string;
  /** The series' metric name: the alias when given. */
  name: string;
  /** The range the branch shows; points are read `shift` seconds from it and moved back by it (`offset`). */
  range: Range;
  shift: number;
  /** The fraction of series kept, by a hash of each series' key. */
  sample?: number;
  test: TagTest;
  stages: Stage[];
}

export interface ComputeBranch {
  kind: 'compute';
  left: Branch;
  right: Branch;
  name: string;
  op: ComputeOp;
  stages: Stage[];
}

export type Branch = SourceBranch | ComputeBranch;

export interface Plan {
  query: Branch;
  dataset: string;
  /** `set custom_unit = "…";` */
  customUnit?: string;
  warnings: string[];
}
