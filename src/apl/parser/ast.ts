/**
 * The APL syntax tree. Every node carries `pos`, the offset of its first character in the query text, so
 * that later stages (binder, compiler) can report errors with a line and column.
 */

export type LiteralType = 'string' | 'long' | 'real' | 'bool' | 'datetime' | 'timespan' | 'dynamic';

/** Literal values: long/datetime/timespan are bigint (datetime and timespan in ns), null is a typed null. */
export type LiteralValue = string | number | bigint | boolean | null | DynamicValue;
export type DynamicValue = null | boolean | number | string | DynamicValue[] | { [k: string]: DynamicValue };

export type Expr =
  | { kind: 'literal'; pos: number; type: LiteralType; value: LiteralValue }
  | { kind: 'name'; pos: number; name: string; quoted: boolean }
  | { kind: 'member'; pos: number; target: Expr; name: string }
  | { kind: 'index'; pos: number; target: Expr; index: Expr }
  | { kind: 'call'; pos: number; name: string; args: Expr[] }
  | { kind: 'unary'; pos: number; op: '-' | '+'; operand: Expr }
  | { kind: 'binary'; pos: number; op: string; left: Expr; right: Expr }
  | { kind: 'list'; pos: number; op: string; left: Expr; items: Expr[] } // in, !in, in~, !in~, has_any...
  | { kind: 'between'; pos: number; negated: boolean; left: Expr; low: Expr; high: Expr }
  | { kind: 'star'; pos: number }
  | { kind: 'typeof'; pos: number; typeName: string }
  // `name = expr` as a call's argument: arg_max(duration, longest = span_id) names an output column.
  | { kind: 'named'; pos: number; name: string; value: Expr };

/** `name = expr`, or a bare expression whose output name the binder derives. */
export interface Assignment {
  pos: number;
  name?: string;
  expr: Expr;
}

export interface SortKey {
  expr: Expr;
  desc: boolean;
  nulls?: 'first' | 'last';
}

/** A column name or a wildcard pattern such as `status*` or `['geo.']*`. */
export interface NamePattern {
  pos: number;
  pattern: string;
  wildcard: boolean;
}

/** A project item: a column or expression, or a wildcard pattern of columns (`['geo.']*`). */
export type ProjectItem = Assignment | { pos: number; pattern: NamePattern };

/** A key of parse-kv, with the type its value is read as. */
export interface KvKey {
  pos: number;
  name: string;
  type?: string;
}

/** A pattern of redact, optionally named. */
export interface RedactPattern {
  pos: number;
  name?: string;
  regex: string;
}

export type Operator =
  | { op: 'where'; pos: number; predicate: Expr }
  // extend-valid is extend that assigns only valid values (a non-empty string, array or map; otherwise tobool).
  | { op: 'extend'; pos: number; items: Assignment[]; valid?: boolean }
  | { op: 'project'; pos: number; items: ProjectItem[] }
  | { op: 'project-away' | 'project-keep'; pos: number; patterns: NamePattern[] }
  | { op: 'project-rename'; pos: number; items: { pos: number; name: string; from: string }[] }
  | {
      op: 'project-reorder';
      pos: number;
      items: { pattern: NamePattern; order?: 'asc' | 'desc' | 'granny-asc' | 'granny-desc' }[];
    }
  | { op: 'summarize'; pos: number; aggs: Assignment[]; by: Assignment[] }
  | { op: 'sort'; pos: number; keys: SortKey[] }
  | { op: 'take'; pos: number; count: Expr }
  | { op: 'top'; pos: number; count: Expr; key: SortKey }
  | { op: 'count'; pos: number }
  | { op: 'distinct'; pos: number; items: Expr[] | 'all' }
  | { op: 'getschema'; pos: number }
  | { op: 'union'; pos: number; withSource?: string; tables: TableRef[] }
  | { op: 'search'; pos: number; caseSensitive: boolean; predicate: Expr }
  | { op: 'join' | 'lookup'; pos: number; kind?: string; right: TableRef; on: JoinCondition[] }
  | {
      op: 'mv-expand';
      pos: number;
      bagKind: 'bag' | 'array';
      itemIndex?: string;
      items: { pos: number; name?: string; expr: Expr; toType?: string }[];
      limit?: number;
    }
  | { op: 'parse' | 'parse-where'; pos: number; kind: 'simple' | 'regex' | 'relaxed'; expr: Expr; parts: ParsePart[] }
  | { op: 'sample'; pos: number; proportion: Expr }
  | {
      op: 'make-series';
      pos: number;
      aggs: (Assignment & { default?: Expr })[];
      axis: Expr;
      from?: Expr;
      to?: Expr;
      step: Expr;
      by: Assignment[];
    }
  | {
      op: 'parse-kv';
      pos: number;
      expr: Expr;
      keys: KvKey[];
      pairDelimiter: string;
      kvDelimiter: string;
      quote?: string;
    }
  | {
      op: 'redact';
      pos: number;
      patterns: RedactPattern[];
      fields?: NamePattern[];
      replaceToken: string;
      replaceHash: boolean;
      redactGroups: boolean;
    }
  | { op: 'unsupported'; pos: number; name: string };

/** A table operand of union/join/lookup/search: a parenthesised tabular expression, or a name or pattern. */
export type TableRef =
  { kind: 'tabular'; pos: number; expr: TabularExpr } | { kind: 'pattern'; pos: number; pattern: string };

/** `key` (the same name on both sides) or `$left.a == $right.b`. */
export interface JoinCondition {
  pos: number;
  left: string;
  right: string;
}

/** Pieces of a parse pattern: constant text, `*` (skip), or a column to capture (with an optional type). */
export type ParsePart =
  { kind: 'const'; text: string } | { kind: 'star' } | { kind: 'name'; name: string; type?: string; pos: number };

export type Source =
  | { kind: 'table'; pos: number; name: string }
  | { kind: 'table-expr'; pos: number; expr: Expr } // table("name"), table(parameter)
  | { kind: 'union'; pos: number; withSource?: string; tables: TableRef[] }
  | { kind: 'search'; pos: number; caseSensitive: boolean; tables?: TableRef[]; predicate: Expr }
  | { kind: 'print'; pos: number; items: Assignment[] }
  | { kind: 'datatable'; pos: number; columns: { name: string; type: string; pos: number }[]; values: Expr[] }
  | { kind: 'unsupported'; pos: number; name: string };

export interface TabularExpr {
  pos: number;
  source: Source;
  ops: Operator[];
}

export type Statement =
  | { kind: 'let'; pos: number; name: string; value: Expr | TabularExpr; tabular: boolean }
  | { kind: 'set'; pos: number; name: string; value?: Expr }
  | { kind: 'declare'; pos: number; params: { name: string; type: string; default?: Expr; pos: number }[] };

export interface Query {
  statements: Statement[];
  body: TabularExpr;
}
