/** The syntax tree of an MPL query file (reference metrics.md §3.2), positions as offsets into its text. */

export type Value =
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'int'; value: number; pos: number }
  | { kind: 'float'; value: number; pos: number }
  | { kind: 'bool'; value: boolean; pos: number }
  | { kind: 'null'; pos: number }
  | { kind: 'array'; items: Value[]; pos: number }
  | { kind: 'param'; name: string; pos: number };

/**
 * A time range's end: seconds before now (`5m`), before the range's end (`-5m`, its start only), after its
 * start (`+5m`, its end only), a Unix time or RFC 3339.
 */
export type TimePoint =
  | { kind: 'ago'; seconds: number; pos: number }
  | { kind: 'behind'; seconds: number; pos: number }
  | { kind: 'ahead'; seconds: number; pos: number }
  | { kind: 'unix'; seconds: number; pos: number }
  | { kind: 'rfc3339'; text: string; pos: number };

export type Filter =
  | { kind: 'or' | 'and'; parts: Filter[]; pos: number }
  | { kind: 'not'; filter: Filter; pos: number }
  | { kind: 'compare'; tag: string; op: '==' | '!=' | '<' | '<=' | '>' | '>='; value: Value; pos: number }
  | { kind: 'regex'; tag: string; negated: boolean; pattern: string; pos: number }
  | { kind: 'is'; tag: string; type: string; pos: number }
  | { kind: 'in'; tag: string; values: Value; pos: number }
  | { kind: 'contains'; tag: string; value: Value; pos: number };

export interface FilterStage {
  kind: 'where';
  filter: Filter;
  /** `ifdef($p) { where … } else { where … }`: the first applies when $p is given. */
  ifdef?: { param: string; otherwise?: Filter };
  /** Written with the deprecated keyword `filter` (a warning). */
  deprecated?: boolean;
  pos: number;
}

/** A function name with its `::` path (`prom::rate`, `fill::prev`) and a numeric argument when given. */
export interface Func {
  name: string;
  arg?: number;
  pos: number;
}

export type Transform =
  | { kind: 'map'; op?: '+' | '-' | '*' | '/'; operand?: number; func?: Func; pos: number }
  | { kind: 'align'; to?: { seconds: number } | { param: string }; using: Func; pos: number }
  | { kind: 'group'; by: string[]; using: Func; pos: number }
  | {
      kind: 'bucket';
      by: string[];
      to?: { seconds: number } | { param: string };
      using: Func;
      /** Numbers (quantiles), and names of modes and statistics (`rate`, `count`, `max`…). */
      args: (Value | { kind: 'ident'; name: string; pos: number })[];
      pos: number;
    }
  | { kind: 'as'; name: string; pos: number }
  | { kind: 'offset'; seconds: number; pos: number };

export interface Source {
  dataset: { name: string } | { param: string };
  metric: string;
  range?: { start: TimePoint; end?: TimePoint };
  alias?: string;
  pos: number;
}

export interface SimpleQuery {
  kind: 'simple';
  source: Source;
  sample?: number;
  filters: FilterStage[];
  transforms: Transform[];
  extend: { name: string; value: Value; pos: number }[];
  pos: number;
}

export interface ComputeQuery {
  kind: 'compute';
  left: Query;
  right: Query;
  name: string;
  using: Func | { op: '+' | '-' | '*' | '/' };
  transforms: Transform[];
  pos: number;
}

export type Query = SimpleQuery | ComputeQuery;

export interface Directive {
  name: string;
  value?: Value | { ident: string };
  pos: number;
}

export interface ParamDecl {
  name: string;
  type: string;
  optional: boolean;
  pos: number;
}

export interface QueryFile {
  directives: Directive[];
  params: ParamDecl[];
  query: Query;
}
