/**
 * Tabular operators: the sources of a pipeline (datasets, lets, print, datatable, union, search) and each
 * operator as stages over relations, with the columns, order and groups it leaves.
 */
import type {
  Expr,
  NamePattern,
  Operator,
  ProjectItem,
  SortKey,
  Source,
  TableRef,
  TabularExpr,
} from '../parser/ast.js';
import { TYPE_NAMES } from '../parser/parser.js';
import { AplError } from '../errors.js';
import { SCHEMA_TYPE, type AplType, type DynamicShape } from '../types.js';
import { UNSUPPORTED_OPERATORS } from '../functions/unsupported.js';
import { redactRegexProblem } from '../functions/redact.js';
import type { BExpr, BoundColumn, BoundStage, OrderKey, Relation, Stage } from './bound.js';
import type { Expressions } from './expressions.js';
import {
  colRef,
  conversionFor,
  remapOrder,
  remapOrderBySelect,
  selectOf,
  setColumn,
  shapeOf,
  sortNames,
  sourceName,
  wildcardMatch,
  validOrKept,
  withTieBreak,
} from './relation.js';
import { parseCaptures, parseKvCaptures, type Capture } from './parse-patterns.js';
import type { Scope } from './scope.js';
import type { Summaries } from './summarize.js';

export class Tabular {
  constructor(
    private readonly scope: Scope,
    private readonly exprs: Expressions,
    private readonly summaries: Summaries,
  ) {}

  tabular(t: TabularExpr): BoundStage[] {
    const stages = this.source(t.source);
    for (const op of t.ops) {
      const rel = stages[stages.length - 1]!.out;
      stages.push(...this.operator(op, rel, stages));
    }
    return stages;
  }

  private source(s: Source): BoundStage[] {
    if (s.kind === 'unsupported') {
      const why = UNSUPPORTED_OPERATORS[s.name];
      return this.scope.fail(
        `the operator "${s.name}" is not supported by this service${why ? `: ${why}` : ''}`,
        s.pos,
      );
    }
    if (s.kind === 'print') {
      const empty: Relation = { columns: [], rowIdentity: false, order: [], groups: [] };
      const cols: BoundColumn[] = [];
      const row: BExpr[] = [];
      s.items.forEach((item, i) => {
        const e = this.exprs.expr(item.expr, empty);
        const name = item.name ?? `print_${i}`;
        cols.push({ name, type: e.type, alias: this.scope.alias(), shape: shapeOf(e) });
        row.push(e);
      });
      return [
        {
          stage: { kind: 'values', columns: cols, rows: [row] },
          out: { columns: cols, rowIdentity: false, order: [], groups: [] },
        },
      ];
    }
    if (s.kind === 'datatable') {
      const empty: Relation = { columns: [], rowIdentity: false, order: [], groups: [] };
      const cols: BoundColumn[] = s.columns.map((c) => ({
        name: c.name,
        type: TYPE_NAMES[c.type]!,
        alias: this.scope.alias(),
      }));
      const rows: BExpr[][] = [];
      for (let i = 0; i < s.values.length; i += cols.length) {
        rows.push(
          cols.map((c, j) => {
            const v = this.exprs.expr(s.values[i + j]!, empty);
            if (v.k !== 'lit') this.scope.fail('datatable values must be constants', s.values[i + j]!.pos);
            if (v.value !== null && v.type !== c.type && !(c.type === 'real' && v.type === 'long')) {
              this.scope.fail(
                `datatable column "${c.name}" is ${c.type}, but this value is ${v.type}`,
                s.values[i + j]!.pos,
              );
            }
            return v;
          }),
        );
      }
      return [
        {
          stage: { kind: 'values', columns: cols, rows },
          out: { columns: cols, rowIdentity: false, order: [], groups: [] },
        },
      ];
    }
    if (s.kind === 'union') return this.union(s.tables, s.withSource, undefined, s.pos);
    if (s.kind === 'table-expr') {
      const name = this.exprs.expr(s.expr, { columns: [], rowIdentity: false, order: [], groups: [] });
      if (name.k !== 'lit' || typeof name.value !== 'string')
        this.scope.fail('table() takes a constant string: the name of a dataset', s.expr.pos);
      return this.tableByName(name.value as string, s.pos);
    }
    if (s.kind === 'search') {
      const tables = s.tables ?? [{ kind: 'pattern' as const, pos: s.pos, pattern: '*' }];
      const stages = this.union(tables, undefined, undefined, s.pos);
      const rel = stages[stages.length - 1]!.out;
      return [
        ...stages,
        {
          stage: { kind: 'filter', predicate: this.exprs.searchPredicate(s.predicate, rel, s.caseSensitive) },
          out: rel,
        },
      ];
    }
    return this.tableByName(s.name, s.pos);
  }

  /** A table named in a query: a let-bound tabular expression or a dataset. */
  private tableByName(name: string, pos: number): BoundStage[] {
    const letValue = this.scope.lets.get(name);
    if (letValue?.kind === 'tabular') {
      // Each use binds the let's pipeline anew: lets using lets twice double the work with every line.
      const uses = this.scope.opts.limits?.letUses;
      if (uses && ++this.scope.letUses > uses.max)
        this.scope.fail(
          `the query writes out its tabular lets more than ${uses.max} times (${uses.setting}); a let used twice is written out twice`,
          pos,
        );
      const outer = this.scope.lets;
      this.scope.lets = letValue.env;
      try {
        return this.tabular(letValue.expr);
      } finally {
        this.scope.lets = outer;
      }
    }
    if (letValue) this.scope.fail(`"${name}" is a scalar, not a table`, pos);
    const s = { name, pos };
    const schema = this.scope.opts.schema(s.name);
    if (!schema) throw new AplError(`dataset "${s.name}" not found`, this.scope.src, s.pos, 'not_found');
    this.scope.datasets.add(s.name);
    const fields = [...schema.fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const columns: BoundColumn[] = [];
    const scanCols: { alias: string; physical: string; readAs?: string }[] = [];
    const add = (name: string, physical: string, type: AplType, shape?: DynamicShape, readAs?: string) => {
      const alias = this.scope.alias();
      columns.push({ name, type, alias, shape });
      scanCols.push({ alias, physical, ...(readAs ? { readAs } : {}) });
    };
    add('_time', '_time', 'datetime');
    add('_sysTime', '_sysTime', 'datetime');
    for (const f of fields) add(f.name, f.column, f.type, f.shape, f.readAs);
    const order: OrderKey[] = [
      { expr: { k: 'hidden', type: 'datetime', alias: '__t' }, desc: true, nullsFirst: false, field: '_time' },
      { expr: { k: 'hidden', type: 'long', alias: '__s' }, desc: true, nullsFirst: false },
    ];
    return [
      {
        stage: { kind: 'scan', dataset: s.name, table: schema.table, columns: scanCols },
        out: { columns, rowIdentity: true, order, groups: [] },
      },
    ];
  }

  /** The stages of a table operand: a parenthesised pipeline, or the tables a name or pattern names. */
  private tableRef(ref: TableRef): BoundStage[][] {
    if (ref.kind === 'tabular') return [this.tabular(ref.expr)];
    if (!ref.pattern.includes('*')) return [this.tableByName(ref.pattern, ref.pos)];
    const names = this.scope.opts
      .datasets()
      .filter((d) => wildcardMatch(ref.pattern, d))
      .sort();
    if (names.length === 0)
      throw new AplError(`no dataset matches "${ref.pattern}"`, this.scope.src, ref.pos, 'not_found');
    return names.map((n) => this.tableByName(n, ref.pos));
  }

  /**
   * union: columns matched by name (the first table's order, then new names as they appear); a name with
   * several types becomes real (numbers) or string; `withsource` adds the dataset name as the first column.
   */
  private union(
    refs: TableRef[],
    withSource: string | undefined,
    first: BoundStage[] | undefined,
    pos: number,
  ): BoundStage[] {
    const inputs: { stages: BoundStage[]; source?: string }[] = [];
    if (first) inputs.push({ stages: first, source: sourceName(first) });
    for (const ref of refs) for (const st of this.tableRef(ref)) inputs.push({ stages: st, source: sourceName(st) });
    if (inputs.length === 0) this.scope.fail('union needs at least one table', pos);
    const byName = new Map<string, { type: AplType; shape?: DynamicShape }>();
    for (const inp of inputs) {
      for (const c of inp.stages[inp.stages.length - 1]!.out.columns) {
        const prev = byName.get(c.name);
        if (!prev) byName.set(c.name, { type: c.type, shape: c.shape });
        else if (prev.type !== c.type)
          byName.set(c.name, {
            type:
              prev.type === 'dynamic' || c.type === 'dynamic'
                ? 'dynamic'
                : (prev.type === 'long' || prev.type === 'real') && (c.type === 'long' || c.type === 'real')
                  ? 'real'
                  : 'string',
          });
      }
    }
    const columns: BoundColumn[] = [];
    if (withSource) columns.push({ name: withSource, type: 'string', alias: this.scope.alias() });
    for (const [name, t] of byName)
      if (name !== withSource) columns.push({ name, type: t.type, shape: t.shape, alias: this.scope.alias() });
    const rowIdentity = inputs.every((i) => i.stages[i.stages.length - 1]!.out.rowIdentity);
    const order: OrderKey[] = rowIdentity
      ? [
          { expr: { k: 'hidden', type: 'datetime', alias: '__t' }, desc: true, nullsFirst: false, field: '_time' },
          { expr: { k: 'hidden', type: 'long', alias: '__s' }, desc: true, nullsFirst: false },
        ]
      : [];
    const out: Relation = { columns, rowIdentity, order, groups: [] };
    const mapped = inputs.map((inp) => {
      const rel = inp.stages[inp.stages.length - 1]!.out;
      const items = columns.map((c) => {
        if (withSource && c.name === withSource)
          return { alias: c.alias, expr: { k: 'lit', type: 'string', value: inp.source ?? '' } as BExpr };
        const own = rel.columns.find((x) => x.name === c.name);
        if (!own) return { alias: c.alias, expr: { k: 'lit', type: c.type, value: null } as BExpr };
        const e = colRef(own);
        return {
          alias: c.alias,
          expr:
            own.type === c.type ? e : ({ k: 'call', type: c.type, fn: conversionFor(c.type), args: [e], pos } as BExpr),
        };
      });
      return [
        ...inp.stages,
        { stage: { kind: 'select', items } as Stage, out: { ...out, rowIdentity: rel.rowIdentity && rowIdentity } },
      ];
    });
    return [{ stage: { kind: 'union', inputs: mapped }, out }];
  }

  private operator(op: Operator, rel: Relation, prior: BoundStage[]): BoundStage[] {
    const keep = (stage: Stage, out: Partial<Relation> = {}): BoundStage => ({ stage, out: { ...rel, ...out } });
    switch (op.op) {
      case 'where': {
        const p = this.exprs.expr(op.predicate, rel);
        if (p.type !== 'bool' && p.type !== 'dynamic')
          this.scope.fail(`the where predicate must be bool, not ${p.type}`, op.predicate.pos);
        if (p.k === 'lit' && p.value === true) {
          this.scope.messages.push({
            priority: 'warn',
            code: 'apl_whereclausealwaysevaluatestoTRUEwhichwillincludealldata_1',
            msg: 'where clause always evaluates to TRUE, which will include all data',
          });
        }
        return [keep({ kind: 'filter', predicate: p })];
      }
      case 'extend': {
        let cols = [...rel.columns];
        const items: { alias: string; expr: BExpr }[] = cols.map((c) => ({ alias: c.alias, expr: colRef(c) }));
        for (const a of op.items) {
          const scope: Relation = { ...rel, columns: cols };
          let e = this.exprs.expr(a.expr, scope);
          const name = a.name ?? this.scope.derivedName(a.expr, true);
          if (op.valid)
            e = validOrKept(
              e,
              cols.find((c) => c.name === name),
              a.pos,
            );
          cols = setColumn(cols, items, { name, type: e.type, alias: this.scope.alias(), shape: shapeOf(e) }, e);
        }
        return [keep({ kind: 'select', items }, { columns: cols, order: remapOrder(rel.order, cols) })];
      }
      case 'project':
        return [this.projectItems(op.items, rel, keep)];
      case 'project-away': {
        const drop = new Set(this.matchPatterns(op.patterns, rel, false).map((c) => c.name));
        const cols = rel.columns.filter((c) => !drop.has(c.name));
        return [keep(selectOf(cols), { columns: cols, order: remapOrder(rel.order, cols) })];
      }
      case 'project-keep': {
        const kept = new Set(this.matchPatterns(op.patterns, rel, true).map((c) => c.name));
        const cols = rel.columns.filter((c) => kept.has(c.name));
        return [keep(selectOf(cols), { columns: cols, order: remapOrder(rel.order, cols) })];
      }
      case 'project-rename': {
        const cols = rel.columns.map((c) => ({ ...c }));
        for (const item of op.items) {
          const c = cols.find((x) => x.name === item.from);
          if (!c) this.scope.fail(`unknown column "${item.from}"`, item.pos);
          c.name = item.name;
        }
        const names = new Set<string>();
        for (const c of cols) {
          if (names.has(c.name)) this.scope.fail(`project-rename would create two columns named "${c.name}"`, op.pos);
          names.add(c.name);
        }
        return [keep(selectOf(cols), { columns: cols })];
      }
      case 'project-reorder': {
        const front: BoundColumn[] = [];
        for (const item of op.items) {
          let matched = this.matchPatterns([item.pattern], rel, true).filter((c) => !front.includes(c));
          if (item.order) matched = sortNames(matched, item.order);
          front.push(...matched);
        }
        const cols = [...front, ...rel.columns.filter((c) => !front.includes(c))];
        return [keep(selectOf(cols), { columns: cols })];
      }
      case 'summarize':
        return this.summaries.summarize(op, rel);
      case 'sort': {
        const keys = op.keys.map((k) => this.orderKey(k, rel));
        return [keep({ kind: 'order', keys: withTieBreak(keys, rel) }, { order: withTieBreak(keys, rel) })];
      }
      case 'take': {
        const n = this.constantCount(op.count, rel, 'take');
        const prev = prior[prior.length - 1]!;
        // After a summary by a time bin, take keeps the top N groups in every bucket (apl.md 4.4).
        if (rel.timeBin && prev.stage.kind === 'aggregate') {
          const keyAliases = prev.stage.keys.map((k) => k.alias).filter((a) => a !== rel.timeBin!.alias);
          const rankBy = prev.stage.aggs.find((a) => a.expr.type === 'long' || a.expr.type === 'real')?.alias;
          return [keep({ kind: 'top-groups', n, timeAlias: rel.timeBin.alias, keyAliases, rankBy })];
        }
        return [keep({ kind: 'limit', n })];
      }
      case 'top': {
        const n = this.constantCount(op.count, rel, 'top');
        const keys = withTieBreak([this.orderKey(op.key, rel)], rel);
        return [keep({ kind: 'order', keys, limit: n }, { order: keys })];
      }
      case 'count': {
        const col: BoundColumn = { name: 'count', type: 'long', alias: this.scope.alias() };
        return [
          {
            stage: { kind: 'count', alias: col.alias },
            out: { columns: [col], rowIdentity: false, order: [], groups: [] },
          },
        ];
      }
      case 'distinct': {
        const cols = op.items === 'all' ? rel.columns : op.items.map((e) => this.distinctColumn(e, rel));
        const items =
          op.items === 'all'
            ? cols.map((c) => ({ alias: c.alias, expr: colRef(c) }))
            : op.items.map((e, i) => ({ alias: cols[i]!.alias, expr: this.exprs.expr(e, rel) }));
        const out: Relation = { columns: cols, rowIdentity: false, order: [], groups: cols.map((c) => c.name) };
        return [
          { stage: { kind: 'select', items }, out: { ...out, rowIdentity: false } },
          { stage: { kind: 'distinct' }, out },
        ];
      }
      case 'getschema': {
        const cols: BoundColumn[] = [
          { name: 'ColumnName', type: 'string', alias: this.scope.alias() },
          { name: 'ColumnOrdinal', type: 'long', alias: this.scope.alias() },
          { name: 'DataType', type: 'string', alias: this.scope.alias() },
          { name: 'ColumnType', type: 'string', alias: this.scope.alias() },
        ];
        const rows: BExpr[][] = rel.columns.map((c, i) => [
          { k: 'lit', type: 'string', value: c.name },
          { k: 'lit', type: 'long', value: BigInt(i) },
          { k: 'lit', type: 'string', value: SCHEMA_TYPE[c.type].dataType },
          {
            k: 'lit',
            type: 'string',
            value: c.shape === 'dictionary' ? 'map[string]' : SCHEMA_TYPE[c.type].columnType,
          },
        ]);
        return [
          {
            stage: { kind: 'values', columns: cols, rows },
            out: { columns: cols, rowIdentity: false, order: [], groups: [] },
          },
        ];
      }
      case 'union':
        // The union stage holds the pipeline so far as its first input and builds its rows from its inputs.
        return this.union(op.tables, op.withSource, prior.slice(), op.pos);
      case 'search':
        return [keep({ kind: 'filter', predicate: this.exprs.searchPredicate(op.predicate, rel, op.caseSensitive) })];
      case 'join':
      case 'lookup':
        return [this.join(op, rel)];
      case 'mv-expand':
        return [this.mvExpand(op, rel)];
      case 'parse':
      case 'parse-where':
        return this.parse(op, rel, keep);
      case 'sample': {
        const p = this.exprs.expr(op.proportion, rel);
        const v = p.k === 'lit' ? Number(p.value) : NaN;
        if (!(v > 0 && v < 1))
          this.scope.fail(
            'sample takes a proportion of rows between 0 and 1, such as 0.05 (not a row count)',
            op.proportion.pos,
          );
        return [keep({ kind: 'sample', fraction: v }, { rowIdentity: rel.rowIdentity })];
      }
      case 'make-series':
        return [this.summaries.makeSeries(op, rel)];
      case 'parse-kv':
        return [this.parseKv(op, rel, keep)];
      case 'redact':
        return [this.redact(op, rel, keep)];
      case 'unsupported': {
        const why = UNSUPPORTED_OPERATORS[op.name];
        return this.scope.fail(
          `the operator "${op.name}" is not supported by this service${why ? `: ${why}` : ''}`,
          op.pos,
        );
      }
    }
  }

  private join(op: Extract<Operator, { op: 'join' | 'lookup' }>, left: Relation): BoundStage {
    const isLookup = op.op === 'lookup';
    const kind = op.kind ?? (isLookup ? 'leftouter' : 'inner');
    const allowed = isLookup ? ['leftouter', 'inner'] : ['inner', 'innerunique', 'leftouter'];
    if (!allowed.includes(kind))
      this.scope.fail(`${op.op} kind=${kind} is not supported (${allowed.join(', ')})`, op.pos);
    const rights = this.tableRef(op.right);
    if (rights.length !== 1) this.scope.fail(`${op.op} takes one table on the right`, op.right.pos);
    const right = rights[0]!;
    const rrel = right[right.length - 1]!.out;
    const on = op.on.map((c) => {
      const l = left.columns.find((x) => x.name === c.left);
      const r = rrel.columns.find((x) => x.name === c.right);
      if (!l) this.scope.fail(`the left side of ${op.op} has no column "${c.left}"`, c.pos);
      if (!r) this.scope.fail(`the right side of ${op.op} has no column "${c.right}"`, c.pos);
      if (
        l.type !== r.type &&
        !((l.type === 'long' || l.type === 'real') && (r.type === 'long' || r.type === 'real'))
      ) {
        this.scope.fail(`${op.op} compares "${c.left}" (${l.type}) with "${c.right}" (${r.type})`, c.pos);
      }
      return { left: l.alias, right: r.alias, sameName: c.left === c.right };
    });
    const names = new Set(left.columns.map((c) => c.name));
    const columns: BoundColumn[] = [...left.columns];
    const rightColumns: { from: string; alias: string }[] = [];
    for (const c of rrel.columns) {
      // lookup does not repeat the key; join keeps both, the right one renamed (key1), as KQL does.
      if (isLookup && on.some((o) => o.right === c.alias && o.sameName)) continue;
      let name = c.name;
      for (let n = 1; names.has(name); n++) name = `${c.name}${n}`;
      names.add(name);
      const alias = this.scope.alias();
      columns.push({ ...c, name, alias, agg: undefined });
      rightColumns.push({ from: c.alias, alias });
    }
    return {
      stage: {
        kind: 'join',
        joinKind: kind as 'inner' | 'innerunique' | 'leftouter',
        right,
        on: on.map(({ left: l, right: r }) => ({ left: l, right: r })),
        rightColumns,
      },
      out: { columns, rowIdentity: false, order: [], groups: [] },
    };
  }

  private mvExpand(op: Extract<Operator, { op: 'mv-expand' }>, rel: Relation): BoundStage {
    let cols = [...rel.columns];
    const items: { alias: string; expr: BExpr; bag: 'bag' | 'array'; toType?: AplType; limit?: number }[] = [];
    const replaced = new Set<string>();
    for (const item of op.items) {
      const e = this.exprs.expr(item.expr, rel);
      if (e.type !== 'dynamic')
        this.scope.fail(`mv-expand expands dynamic arrays or bags, not ${e.type}`, item.expr.pos);
      const name = item.name ?? this.scope.derivedName(item.expr, true);
      const type = item.toType ? TYPE_NAMES[item.toType]! : 'dynamic';
      const alias = this.scope.alias();
      const col: BoundColumn = { name, type, alias };
      const at = cols.findIndex((c) => c.name === name);
      if (at >= 0) {
        replaced.add(cols[at]!.alias);
        cols[at] = col;
      } else cols.push(col);
      items.push({ alias, expr: e, bag: op.bagKind, toType: item.toType ? type : undefined, limit: op.limit });
    }
    let indexAlias: string | undefined;
    if (op.itemIndex) {
      indexAlias = this.scope.alias();
      cols = [...cols.filter((c) => c.name !== op.itemIndex), { name: op.itemIndex, type: 'long', alias: indexAlias }];
    }
    const keep = rel.columns.filter((c) => !replaced.has(c.alias) && cols.includes(c)).map((c) => c.alias);
    return {
      stage: { kind: 'expand', keep, items, indexAlias },
      out: { columns: cols, rowIdentity: false, order: [], groups: [] },
    };
  }

  /** parse / parse-where: the pattern becomes one regular expression; each captured column is a group of it. */
  private parse(
    op: Extract<Operator, { op: 'parse' | 'parse-where' }>,
    rel: Relation,
    keep: (s: Stage, o?: Partial<Relation>) => BoundStage,
  ): BoundStage[] {
    const { captures, matches } = parseCaptures(op, this.exprs.expr(op.expr, rel));
    const out: BoundStage[] = [];
    if (op.op === 'parse-where') out.push(keep({ kind: 'filter', predicate: matches }));
    out.push(this.setCaptures(captures, rel, keep));
    return out;
  }

  /** Columns set to what a parse captured, the others kept. */
  private setCaptures(
    captures: Capture[],
    rel: Relation,
    keep: (s: Stage, o?: Partial<Relation>) => BoundStage,
  ): BoundStage {
    let cols = [...rel.columns];
    const items: { alias: string; expr: BExpr }[] = cols.map((c) => ({ alias: c.alias, expr: colRef(c) }));
    for (const c of captures)
      cols = setColumn(cols, items, { name: c.name, type: c.type, alias: this.scope.alias() }, c.expr);
    return keep({ kind: 'select', items }, { columns: cols, order: remapOrder(rel.order, cols) });
  }

  private projectItems(
    items: ProjectItem[],
    rel: Relation,
    keep: (s: Stage, o: Partial<Relation>) => BoundStage,
  ): BoundStage {
    const cols: BoundColumn[] = [];
    const sel: { alias: string; expr: BExpr }[] = [];
    const add = (name: string, e: BExpr, agg: BoundColumn['agg']) => {
      const source = e.k === 'col' ? rel.columns.find((c) => c.alias === e.alias) : undefined;
      const alias = this.scope.alias();
      cols.push({ name, type: e.type, alias, shape: shapeOf(e) ?? source?.shape, agg: agg ?? source?.agg });
      sel.push({ alias, expr: e });
    };
    for (const a of items) {
      if ('pattern' in a) {
        // A wildcard adds the columns it matches that the list has not named yet, in their order.
        for (const c of this.matchPatterns([a.pattern], rel, true))
          if (!cols.some((x) => x.name === c.name)) add(c.name, colRef(c), undefined);
        continue;
      }
      const e = this.exprs.expr(a.expr, rel);
      const taken = (n: string) => cols.some((c) => c.name === n);
      let name = a.name ?? this.scope.derivedName(a.expr, true);
      if (a.name !== undefined && taken(name)) this.scope.fail(`project lists the column "${name}" twice`, a.pos);
      // A derived name already taken gets 1, 2… (cos(a), sin(a) → a, a1), as Axiom's language service does.
      for (let n = 1, base = name; taken(name); n++) name = `${base}${n}`;
      add(name, e, undefined);
    }
    return keep({ kind: 'select', items: sel }, { columns: cols, order: remapOrderBySelect(rel.order, sel, cols) });
  }

  /** parse-kv: each key's value is the text after `key<kv_delimiter>` up to the next pair delimiter (or in quotes). */
  private parseKv(
    op: Extract<Operator, { op: 'parse-kv' }>,
    rel: Relation,
    keep: (s: Stage, o?: Partial<Relation>) => BoundStage,
  ): BoundStage {
    return this.setCaptures(parseKvCaptures(op, this.exprs.expr(op.expr, rel)), rel, keep);
  }

  /** redact: matches of the patterns in string columns (all of them, or those named) are masked or hashed. */
  private redact(
    op: Extract<Operator, { op: 'redact' }>,
    rel: Relation,
    keep: (s: Stage, o?: Partial<Relation>) => BoundStage,
  ): BoundStage {
    for (const p of op.patterns) {
      const problem = redactRegexProblem(p.regex);
      if (problem) this.scope.fail(`redact: ${problem}`, p.pos);
    }
    const targets = op.fields
      ? this.matchPatterns(op.fields, rel, true)
      : rel.columns.filter((c) => c.type === 'string');
    for (const c of targets)
      if (c.type !== 'string') this.scope.fail(`redact works on string fields; "${c.name}" is ${c.type}`, op.pos);
    const options: BExpr = {
      k: 'lit',
      type: 'string',
      value: JSON.stringify({
        patterns: op.patterns.map((p) => p.regex),
        token: op.replaceToken,
        hash: op.replaceHash,
        groups: op.redactGroups,
      }),
    };
    const items = rel.columns.map((c) => ({
      alias: c.alias,
      expr: targets.includes(c)
        ? ({ k: 'call', type: 'string', fn: 'redact#', args: [colRef(c), options], pos: op.pos } as BExpr)
        : colRef(c),
    }));
    return keep({ kind: 'select', items });
  }

  private distinctColumn(e: Expr, rel: Relation): BoundColumn {
    const b = this.exprs.expr(e, rel);
    return { name: this.scope.derivedName(e, true), type: b.type, alias: this.scope.alias(), shape: shapeOf(b) };
  }

  private orderKey(k: SortKey, rel: Relation): OrderKey {
    const e = this.exprs.expr(k.expr, rel);
    const nullsFirst = k.nulls ? k.nulls === 'first' : !k.desc; // KQL: nulls first ascending, last descending
    return { expr: e, desc: k.desc, nullsFirst, field: e.k === 'col' ? e.name : undefined };
  }

  private constantCount(e: Expr, rel: Relation, op: string): number {
    const b = this.exprs.expr(e, rel);
    if (b.k !== 'lit' || b.type !== 'long' || b.value === null || (b.value as bigint) < 0n)
      this.scope.fail(`${op} needs a constant row count of 0 or more`, e.pos);
    return Number(b.value as bigint);
  }

  private matchPatterns(patterns: NamePattern[], rel: Relation, mustMatch: boolean): BoundColumn[] {
    const out: BoundColumn[] = [];
    for (const p of patterns) {
      const matched = p.wildcard
        ? rel.columns.filter((c) => wildcardMatch(p.pattern, c.name))
        : rel.columns.filter((c) => c.name === p.pattern);
      if (matched.length === 0 && (!p.wildcard || mustMatch))
        this.scope.fail(`no column matches "${p.pattern}"`, p.pos);
      for (const c of matched) if (!out.includes(c)) out.push(c);
    }
    return out;
  }
}
