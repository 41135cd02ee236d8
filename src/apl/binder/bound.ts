/**
 * The bound query: names resolved to columns, every expression typed, every operator turned into a stage
 * over a known relation. The compiler turns it into SQL without looking anything up.
 */
import type { LiteralValue } from '../parser/ast.js';
import type { AplType, DynamicShape } from '../types.js';

export type BExpr =
  /** `open`: a field of an event, whose fields are not known before it comes (an agent's transform). */
  | { k: 'col'; type: AplType; alias: string; name: string; shape?: DynamicShape; open?: boolean }
  | { k: 'lit'; type: AplType; value: LiteralValue }
  | { k: 'call'; type: AplType; fn: string; args: BExpr[]; pos: number } // a scalar function or operator
  | { k: 'agg'; type: AplType; fn: string; args: BExpr[]; pos: number }
  | { k: 'in'; type: 'bool'; op: string; left: BExpr; items: BExpr[] }
  | { k: 'has_any'; type: 'bool'; left: BExpr; terms: string[]; caseSensitive: boolean }
  | { k: 'between'; type: 'bool'; negated: boolean; left: BExpr; low: BExpr; high: BExpr }
  | { k: 'path'; type: 'dynamic'; target: BExpr; path: (string | number | BExpr)[] } // dynamic member access
  | { k: 'hidden'; type: AplType; alias: HiddenColumn };

/** Columns every row of a dataset scan carries until an aggregation, for cursors and the stream order. */
export type HiddenColumn = '__t' | '__s' | '__st' | '__now';
export const HIDDEN: HiddenColumn[] = ['__t', '__s', '__st'];
/** `__now`: the instant an event is evaluated at, for pipelines that run for longer than a query (`nowNs: 'live'`). */

/** What `agg` says in a tabular result field. */
export interface AggMeta {
  name: string;
  fields: string[];
  args: unknown[];
}

export interface BoundColumn {
  name: string;
  type: AplType;
  alias: string;
  shape?: DynamicShape;
  agg?: AggMeta;
}

export interface OrderKey {
  expr: BExpr;
  desc: boolean;
  nullsFirst: boolean;
  /** The output column the key is, for the result's `order`. */
  field?: string;
}

/** A relation: the visible columns in order, whether rows still carry their identity, and their order. */
export interface Relation {
  columns: BoundColumn[];
  rowIdentity: boolean;
  order: OrderKey[];
  /** Set after a summarize by a time bin: the bin column and its size (for `buckets` and `_totals`). */
  timeBin?: { alias: string; name: string; sizeNs: bigint };
  /** Group-by column names of the last summarize (the result's `groups`). */
  groups: string[];
}

export type Stage =
  | {
      kind: 'scan';
      dataset: string;
      table: string;
      columns: { alias: string; physical: string; readAs?: string }[];
    }
  | { kind: 'values'; columns: BoundColumn[]; rows: BExpr[][] }
  | { kind: 'filter'; predicate: BExpr }
  | { kind: 'select'; items: { alias: string; expr: BExpr }[] }
  | { kind: 'aggregate'; keys: { alias: string; expr: BExpr }[]; aggs: { alias: string; expr: BExpr }[] }
  | { kind: 'order'; keys: OrderKey[]; limit?: number }
  | { kind: 'limit'; n: number }
  | { kind: 'top-groups'; n: number; timeAlias: string; keyAliases: string[]; rankBy?: string }
  | { kind: 'distinct' }
  | { kind: 'count'; alias: string }
  /** Inputs each end in a select that yields the union's aliases; rows are concatenated. */
  | { kind: 'union'; inputs: BoundStage[][] }
  | {
      kind: 'join';
      joinKind: 'inner' | 'innerunique' | 'leftouter';
      right: BoundStage[];
      on: { left: string; right: string }[];
      /** Output columns taken from the right side: right alias → output alias. */
      rightColumns: { from: string; alias: string }[];
    }
  /** mv-expand: `items` replace or add columns with the elements of arrays (or bags); other columns repeat. */
  | {
      kind: 'expand';
      keep: string[];
      items: {
        alias: string;
        expr: BExpr;
        bag: 'bag' | 'array';
        toType?: import('../types.js').AplType;
        limit?: number;
      }[];
      indexAlias?: string;
    }
  | { kind: 'sample'; fraction: number }
  /**
   * make-series: per group, one array per aggregate with a value for every step from `from` to `to`
   * (missing steps take the default), and the array of step starts. Axis values are ns (datetime) or numbers.
   */
  | {
      kind: 'series';
      keys: { alias: string; expr: BExpr }[];
      aggs: { alias: string; expr: BExpr; default: BExpr }[];
      axis: BExpr;
      axisAlias: string;
      step: number | bigint;
      from?: BExpr;
      to?: BExpr;
    };

export interface BoundStage {
  stage: Stage;
  out: Relation;
}

export interface BoundQuery {
  stages: BoundStage[];
  /** Datasets the query reads (for access checks, fieldsMetaMap and datasetNames). */
  datasets: string[];
  /** The stages of the `_totals` table, for a summary by a time bin. */
  totals?: BoundStage[];
  /**
   * Stages whose rows are the query's matched rows: the scan and the filters before the first operator
   * that changes the row set in another way. rowsMatched counts them.
   */
  matchedPrefix: number;
  /**
   * How rowsMatched is found without scanning twice where possible: `examined` (no filters: every examined
   * row matches), `count` (the query ends in `count` right after the filters), `window` (a summary follows
   * the filters: the sum of its group counts rides along), `cte` (a sort/take follows: the matched rows are
   * materialised once and both ordered and counted), or `query` (a separate count query).
   */
  matchedMode: 'examined' | 'count' | 'window' | 'cte' | 'query';
  /** The query ends in a take/limit: its count caps the page size. */
  queryLimit?: number;
  /** The bin_auto size chosen, for `buckets`. */
  binAutoNs?: bigint;
  /** The query depends on the length of its time range (bin_auto, rate without a time bin). */
  usesRangeLength: boolean;
  messages: { priority: string; code: string; msg: string }[];
}
