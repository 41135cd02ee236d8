/**
 * The binder: resolves names against dataset schemas and let bindings, types every expression, checks
 * functions and their arguments, and turns the operator pipeline into stages over known relations
 * (./bound.ts). Everything a query gets wrong is reported here, with its position, before any SQL runs.
 */
import { AplError } from '../errors.js';
import type { Assignment, Expr, LiteralType, LiteralValue, NamePattern, Operator, Query, SortKey, Source, TableRef, TabularExpr } from '../parser/ast.js';
import { parseDatetimeText, TYPE_NAMES } from '../parser/parser.js';
import { AGGREGATE_FUNCTIONS } from '../functions/aggregate.js';
import { ArgumentError, type ArgInfo, type TypeContext } from '../functions/catalog.js';
import type { SqlArg } from '../functions/sql.js';
import { OPERATORS } from '../functions/operators.js';
import { SCALAR_FUNCTIONS } from '../functions/scalar.js';
import { SCHEMA_TYPE, type AplType, type DatasetSchema, type DynamicShape } from '../types.js';
import type { AggMeta, BExpr, BoundColumn, BoundQuery, BoundStage, OrderKey, Relation, Stage } from './bound.js';

export interface BindOptions {
  /** The dataset's schema, or undefined when there is no such dataset. */
  schema(dataset: string): DatasetSchema | undefined;
  /** now() for the whole query, ns since the epoch. */
  nowNs: bigint;
  /** The bin size bin_auto() uses (chosen by the caller from the query's time range). */
  binAutoNs: bigint;
  /** The length of the query's time range (rate() without a time bin divides by it). */
  rangeNs: bigint;
  /** Every dataset's name, for patterns (union github*, search). */
  datasets(): string[];
}

/** Conversion functions name their output after their argument (`tostring(method)` → method). */
const NAME_PRESERVING = new Set(['tostring', 'toint', 'tolong', 'toreal', 'todouble', 'tobool', 'toboolean', 'todatetime', 'totimespan', 'todynamic', 'bin', 'bin_auto', 'floor']);

/** A tabular let is bound where it is used, but with the names defined before it (no self or forward references). */
type LetValue = { kind: 'scalar'; expr: BExpr } | { kind: 'tabular'; expr: TabularExpr; env: Map<string, LetValue> };

export function bind(query: Query, source: string, opts: BindOptions): BoundQuery {
  return new Binder(source, opts).bindQuery(query);
}

class Binder {
  private aliasSeq = 0;
  private lets = new Map<string, LetValue>();
  private readonly typeCtx: TypeContext = { strict: false };
  private readonly datasets = new Set<string>();
  private readonly messages: BoundQuery['messages'] = [];
  private binAutoUsed = false;
  private rangeLengthUsed = false;
  private columnSeq = 0;

  constructor(private readonly src: string, private readonly opts: BindOptions) {}

  private fail(message: string, pos: number): never {
    throw new AplError(message, this.src, pos);
  }

  private alias(): string {
    return `c${++this.aliasSeq}`;
  }

  bindQuery(q: Query): BoundQuery {
    const empty: Relation = { columns: [], rowIdentity: false, order: [], groups: [] };
    for (const st of q.statements) {
      if (st.kind === 'let') {
        if (st.tabular) this.lets.set(st.name, { kind: 'tabular', expr: st.value as TabularExpr, env: new Map(this.lets) });
        else {
          const e = st.value as Expr;
          // `let T = ['dataset'];` names a table.
          if (e.kind === 'name' && !this.lets.has(e.name) && this.opts.schema(e.name)) {
            this.lets.set(st.name, { kind: 'tabular', expr: { pos: e.pos, source: { kind: 'table', pos: e.pos, name: e.name }, ops: [] }, env: new Map(this.lets) });
          } else this.lets.set(st.name, { kind: 'scalar', expr: this.expr(e, empty) });
        }
      } else if (st.kind === 'set') {
        if (st.name === 'stricttypes') this.typeCtx.strict = true;
        else this.fail(`unknown query option "${st.name}" (only stricttypes is supported)`, st.pos);
      } else {
        for (const p of st.params) {
          const type = TYPE_NAMES[p.type]!;
          const value: BExpr = p.default ? this.coerceConstant(this.expr(p.default, empty), type, p.pos) : { k: 'lit', type, value: type === 'string' ? '' : null };
          this.lets.set(p.name, { kind: 'scalar', expr: value });
        }
      }
    }
    const stages = this.tabular(q.body);
    const matchedPrefix = matchedPrefixLength(stages);
    const out: BoundQuery = {
      stages,
      datasets: [...this.datasets],
      matchedPrefix,
      matchedMode: matchedModeOf(stages, matchedPrefix),
      messages: this.messages,
      usesRangeLength: this.binAutoUsed || this.rangeLengthUsed,
    };
    const last = stages[stages.length - 1]!.stage;
    if (last.kind === 'limit') out.queryLimit = last.n;
    if (last.kind === 'order' && last.limit !== undefined) out.queryLimit = last.limit;
    if (this.binAutoUsed) out.binAutoNs = this.opts.binAutoNs;
    out.totals = this.totalsStages(stages);
    return out;
  }

  private coerceConstant(e: BExpr, type: LiteralType, pos: number): BExpr {
    if (e.k !== 'lit') this.fail('a parameter default must be a constant', pos);
    return e.type === type ? e : { k: 'call', type, fn: conversionFor(type), args: [e], pos };
  }

  // ---- tabular -------------------------------------------------------------------------------------------

  private tabular(t: TabularExpr): BoundStage[] {
    const stages = this.source(t.source);
    for (const op of t.ops) {
      const rel = stages[stages.length - 1]!.out;
      stages.push(...this.operator(op, rel, stages));
    }
    return stages;
  }

  private source(s: Source): BoundStage[] {
    if (s.kind === 'print') {
      const empty: Relation = { columns: [], rowIdentity: false, order: [], groups: [] };
      const cols: BoundColumn[] = [];
      const row: BExpr[] = [];
      s.items.forEach((item, i) => {
        const e = this.expr(item.expr, empty);
        const name = item.name ?? `print_${i}`;
        cols.push({ name, type: e.type, alias: this.alias() });
        row.push(e);
      });
      return [{ stage: { kind: 'values', columns: cols, rows: [row] }, out: { columns: cols, rowIdentity: false, order: [], groups: [] } }];
    }
    if (s.kind === 'datatable') {
      const empty: Relation = { columns: [], rowIdentity: false, order: [], groups: [] };
      const cols: BoundColumn[] = s.columns.map((c) => ({ name: c.name, type: TYPE_NAMES[c.type]!, alias: this.alias() }));
      const rows: BExpr[][] = [];
      for (let i = 0; i < s.values.length; i += cols.length) {
        rows.push(cols.map((c, j) => {
          const v = this.expr(s.values[i + j]!, empty);
          if (v.k !== 'lit') this.fail('datatable values must be constants', s.values[i + j]!.pos);
          if (v.value !== null && v.type !== c.type && !(c.type === 'real' && v.type === 'long')) {
            this.fail(`datatable column "${c.name}" is ${c.type}, but this value is ${v.type}`, s.values[i + j]!.pos);
          }
          return v;
        }));
      }
      return [{ stage: { kind: 'values', columns: cols, rows }, out: { columns: cols, rowIdentity: false, order: [], groups: [] } }];
    }
    if (s.kind === 'union') return this.union(s.tables, s.withSource, undefined, s.pos);
    if (s.kind === 'table-expr') {
      const name = this.expr(s.expr, { columns: [], rowIdentity: false, order: [], groups: [] });
      if (name.k !== 'lit' || typeof name.value !== 'string') this.fail('table() takes a constant string: the name of a dataset', s.expr.pos);
      return this.tableByName(name.value as string, s.pos);
    }
    if (s.kind === 'search') {
      const tables = s.tables ?? [{ kind: 'pattern' as const, pos: s.pos, pattern: '*' }];
      const stages = this.union(tables, undefined, undefined, s.pos);
      const rel = stages[stages.length - 1]!.out;
      return [...stages, { stage: { kind: 'filter', predicate: this.searchPredicate(s.predicate, rel, s.caseSensitive) }, out: rel }];
    }
    return this.tableByName(s.name, s.pos);
  }

  /** A table named in a query: a let-bound tabular expression or a dataset. */
  private tableByName(name: string, pos: number): BoundStage[] {
    const letValue = this.lets.get(name);
    if (letValue?.kind === 'tabular') {
      const outer = this.lets;
      this.lets = letValue.env;
      try {
        return this.tabular(letValue.expr);
      } finally {
        this.lets = outer;
      }
    }
    if (letValue) this.fail(`"${name}" is a scalar, not a table`, pos);
    const s = { name, pos };
    const schema = this.opts.schema(s.name);
    if (!schema) throw new AplError(`dataset "${s.name}" not found`, this.src, s.pos, 'not_found');
    this.datasets.add(s.name);
    const fields = [...schema.fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const columns: BoundColumn[] = [];
    const scanCols: { alias: string; physical: string }[] = [];
    const add = (name: string, physical: string, type: AplType, shape?: DynamicShape) => {
      const alias = this.alias();
      columns.push({ name, type, alias, shape });
      scanCols.push({ alias, physical });
    };
    add('_time', '_time', 'datetime');
    add('_sysTime', '_sysTime', 'datetime');
    for (const f of fields) add(f.name, f.column, f.type, f.shape);
    const order: OrderKey[] = [
      { expr: { k: 'hidden', type: 'datetime', alias: '__t' }, desc: true, nullsFirst: false, field: '_time' },
      { expr: { k: 'hidden', type: 'long', alias: '__s' }, desc: true, nullsFirst: false },
    ];
    return [{ stage: { kind: 'scan', dataset: s.name, table: schema.table, columns: scanCols }, out: { columns, rowIdentity: true, order, groups: [] } }];
  }

  /** The stages of a table operand: a parenthesised pipeline, or the tables a name or pattern names. */
  private tableRef(ref: TableRef): BoundStage[][] {
    if (ref.kind === 'tabular') return [this.tabular(ref.expr)];
    if (!ref.pattern.includes('*')) return [this.tableByName(ref.pattern, ref.pos)];
    const re = new RegExp(`^${ref.pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    const names = this.opts.datasets().filter((d) => re.test(d)).sort();
    if (names.length === 0) throw new AplError(`no dataset matches "${ref.pattern}"`, this.src, ref.pos, 'not_found');
    return names.map((n) => this.tableByName(n, ref.pos));
  }

  /**
   * union: columns matched by name (the first table's order, then new names as they appear); a name with
   * several types becomes real (numbers) or string; `withsource` adds the dataset name as the first column.
   */
  private union(refs: TableRef[], withSource: string | undefined, first: BoundStage[] | undefined, pos: number): BoundStage[] {
    const inputs: { stages: BoundStage[]; source?: string }[] = [];
    if (first) inputs.push({ stages: first, source: sourceName(first) });
    for (const ref of refs) for (const st of this.tableRef(ref)) inputs.push({ stages: st, source: sourceName(st) });
    if (inputs.length === 0) this.fail('union needs at least one table', pos);
    const byName = new Map<string, { type: AplType; shape?: DynamicShape }>();
    for (const inp of inputs) {
      for (const c of inp.stages[inp.stages.length - 1]!.out.columns) {
        const prev = byName.get(c.name);
        if (!prev) byName.set(c.name, { type: c.type, shape: c.shape });
        else if (prev.type !== c.type) byName.set(c.name, { type: prev.type === 'dynamic' || c.type === 'dynamic' ? 'dynamic' : (prev.type === 'long' || prev.type === 'real') && (c.type === 'long' || c.type === 'real') ? 'real' : 'string' });
      }
    }
    const columns: BoundColumn[] = [];
    if (withSource) columns.push({ name: withSource, type: 'string', alias: this.alias() });
    for (const [name, t] of byName) if (name !== withSource) columns.push({ name, type: t.type, shape: t.shape, alias: this.alias() });
    const rowIdentity = inputs.every((i) => i.stages[i.stages.length - 1]!.out.rowIdentity);
    const order: OrderKey[] = rowIdentity ? [
      { expr: { k: 'hidden', type: 'datetime', alias: '__t' }, desc: true, nullsFirst: false, field: '_time' },
      { expr: { k: 'hidden', type: 'long', alias: '__s' }, desc: true, nullsFirst: false },
    ] : [];
    const out: Relation = { columns, rowIdentity, order, groups: [] };
    const mapped = inputs.map((inp) => {
      const rel = inp.stages[inp.stages.length - 1]!.out;
      const items = columns.map((c) => {
        if (withSource && c.name === withSource) return { alias: c.alias, expr: { k: 'lit', type: 'string', value: inp.source ?? '' } as BExpr };
        const own = rel.columns.find((x) => x.name === c.name);
        if (!own) return { alias: c.alias, expr: { k: 'lit', type: c.type, value: null } as BExpr };
        const e = colRef(own);
        return { alias: c.alias, expr: own.type === c.type ? e : { k: 'call', type: c.type, fn: conversionFor(c.type), args: [e], pos } as BExpr };
      });
      return [...inp.stages, { stage: { kind: 'select', items } as Stage, out: { ...out, rowIdentity: rel.rowIdentity && rowIdentity } }];
    });
    return [{ stage: { kind: 'union', inputs: mapped }, out }];
  }

  /** search's predicate: a bare string is a term looked for in every column ("x*" prefix, "*x" suffix, "*x*" substring). */
  private searchPredicate(e: Expr, rel: Relation, caseSensitive: boolean): BExpr {
    if (e.kind === 'literal' && e.type === 'string') return this.anyColumn(searchTerm(String(e.value), caseSensitive), rel, e.pos);
    if (e.kind === 'binary' && (e.op === 'and' || e.op === 'or')) {
      return this.op(e.op, [this.searchPredicate(e.left, rel, caseSensitive), this.searchPredicate(e.right, rel, caseSensitive)], e.pos);
    }
    if (e.kind === 'call' && e.name === 'not' && e.args.length === 1) return this.op('not#', [this.searchPredicate(e.args[0]!, rel, caseSensitive)], e.pos);
    if (e.kind === 'binary' && e.op === 'has' && e.left.kind === 'name' && e.right.kind === 'literal' && typeof e.right.value === 'string') {
      const col = this.expr(e.left, rel);
      const { op, text } = searchTerm(e.right.value, caseSensitive);
      return this.op(op, [col, { k: 'lit', type: 'string', value: text }], e.pos);
    }
    const b = this.expr(e, rel);
    if (b.type !== 'bool') this.fail(`a search predicate must be a term or a bool expression, not ${b.type}`, e.pos);
    return b;
  }

  /** `term` tested against every column, as an or. */
  private anyColumn(term: { op: string; text: string }, rel: Relation, pos: number): BExpr {
    const cols = rel.columns.filter((c) => c.type === 'string' || c.type === 'dynamic' || c.type === 'long' || c.type === 'real' || c.type === 'bool');
    if (cols.length === 0) return { k: 'lit', type: 'bool', value: false };
    const tests = cols.map((c) => this.op(term.op, [colRef(c), { k: 'lit', type: 'string', value: term.text }], pos));
    return tests.reduce((a, b) => this.op('or', [a, b], pos));
  }

  private operator(op: Operator, rel: Relation, prior: BoundStage[]): BoundStage[] {
    const keep = (stage: Stage, out: Partial<Relation> = {}): BoundStage => ({ stage, out: { ...rel, ...out } });
    switch (op.op) {
      case 'where': {
        const p = this.expr(op.predicate, rel);
        if (p.type !== 'bool' && p.type !== 'dynamic') this.fail(`the where predicate must be bool, not ${p.type}`, op.predicate.pos);
        if (p.k === 'lit' && p.value === true) {
          this.messages.push({ priority: 'warn', code: 'apl_whereclausealwaysevaluatestoTRUEwhichwillincludealldata_1', msg: 'where clause always evaluates to TRUE, which will include all data' });
        }
        return [keep({ kind: 'filter', predicate: p })];
      }
      case 'extend': {
        let cols = [...rel.columns];
        const items: { alias: string; expr: BExpr }[] = cols.map((c) => ({ alias: c.alias, expr: colRef(c) }));
        for (const a of op.items) {
          const scope: Relation = { ...rel, columns: cols };
          const e = this.expr(a.expr, scope);
          const name = a.name ?? this.derivedName(a.expr, true);
          cols = setColumn(cols, items, { name, type: e.type, alias: this.alias(), shape: shapeOf(e) }, e);
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
          if (!c) this.fail(`unknown column "${item.from}"`, item.pos);
          c.name = item.name;
        }
        const names = new Set<string>();
        for (const c of cols) {
          if (names.has(c.name)) this.fail(`project-rename would create two columns named "${c.name}"`, op.pos);
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
        return this.summarize(op, rel);
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
        const col: BoundColumn = { name: 'count', type: 'long', alias: this.alias() };
        return [{ stage: { kind: 'count', alias: col.alias }, out: { columns: [col], rowIdentity: false, order: [], groups: [] } }];
      }
      case 'distinct': {
        const cols = op.items === 'all' ? rel.columns : op.items.map((e) => this.distinctColumn(e, rel));
        const items = op.items === 'all' ? cols.map((c) => ({ alias: c.alias, expr: colRef(c) })) : op.items.map((e, i) => ({ alias: cols[i]!.alias, expr: this.expr(e, rel) }));
        const out: Relation = { columns: cols, rowIdentity: false, order: [], groups: cols.map((c) => c.name) };
        return [
          { stage: { kind: 'select', items }, out: { ...out, rowIdentity: false } },
          { stage: { kind: 'distinct' }, out },
        ];
      }
      case 'getschema': {
        const cols: BoundColumn[] = [
          { name: 'ColumnName', type: 'string', alias: this.alias() },
          { name: 'ColumnOrdinal', type: 'long', alias: this.alias() },
          { name: 'DataType', type: 'string', alias: this.alias() },
          { name: 'ColumnType', type: 'string', alias: this.alias() },
        ];
        const rows: BExpr[][] = rel.columns.map((c, i) => [
          { k: 'lit', type: 'string', value: c.name },
          { k: 'lit', type: 'long', value: BigInt(i) },
          { k: 'lit', type: 'string', value: SCHEMA_TYPE[c.type].dataType },
          { k: 'lit', type: 'string', value: c.shape === 'dictionary' ? 'map[string]' : SCHEMA_TYPE[c.type].columnType },
        ]);
        return [{ stage: { kind: 'values', columns: cols, rows }, out: { columns: cols, rowIdentity: false, order: [], groups: [] } }];
      }
      case 'union':
        // The union stage holds the pipeline so far as its first input and builds its rows from its inputs.
        return this.union(op.tables, op.withSource, prior.slice(), op.pos);
      case 'search':
        return [keep({ kind: 'filter', predicate: this.searchPredicate(op.predicate, rel, op.caseSensitive) })];
      case 'join':
      case 'lookup':
        return [this.join(op, rel)];
      case 'mv-expand':
        return [this.mvExpand(op, rel)];
      case 'parse':
      case 'parse-where':
        return this.parse(op, rel, keep);
      case 'sample': {
        const p = this.expr(op.proportion, rel);
        const v = p.k === 'lit' ? Number(p.value) : NaN;
        if (!(v > 0 && v < 1)) this.fail('sample takes a proportion of rows between 0 and 1, such as 0.05 (not a row count)', op.proportion.pos);
        return [keep({ kind: 'sample', fraction: v }, { rowIdentity: rel.rowIdentity })];
      }
      case 'make-series':
        return [this.makeSeries(op, rel)];
      case 'unsupported':
        return this.fail(`the operator "${op.name}" is not supported by this service`, op.pos);
    }
  }

  private join(op: Extract<Operator, { op: 'join' | 'lookup' }>, left: Relation): BoundStage {
    const isLookup = op.op === 'lookup';
    const kind = op.kind ?? (isLookup ? 'leftouter' : 'inner');
    const allowed = isLookup ? ['leftouter', 'inner'] : ['inner', 'innerunique', 'leftouter'];
    if (!allowed.includes(kind)) this.fail(`${op.op} kind=${kind} is not supported (${allowed.join(', ')})`, op.pos);
    const rights = this.tableRef(op.right);
    if (rights.length !== 1) this.fail(`${op.op} takes one table on the right`, op.right.pos);
    const right = rights[0]!;
    const rrel = right[right.length - 1]!.out;
    const on = op.on.map((c) => {
      const l = left.columns.find((x) => x.name === c.left);
      const r = rrel.columns.find((x) => x.name === c.right);
      if (!l) this.fail(`the left side of ${op.op} has no column "${c.left}"`, c.pos);
      if (!r) this.fail(`the right side of ${op.op} has no column "${c.right}"`, c.pos);
      if (l.type !== r.type && !((l.type === 'long' || l.type === 'real') && (r.type === 'long' || r.type === 'real'))) {
        this.fail(`${op.op} compares "${c.left}" (${l.type}) with "${c.right}" (${r.type})`, c.pos);
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
      const alias = this.alias();
      columns.push({ ...c, name, alias, agg: undefined });
      rightColumns.push({ from: c.alias, alias });
    }
    return {
      stage: { kind: 'join', joinKind: kind as 'inner' | 'innerunique' | 'leftouter', right, on: on.map(({ left: l, right: r }) => ({ left: l, right: r })), rightColumns },
      out: { columns, rowIdentity: false, order: [], groups: [] },
    };
  }

  private makeSeries(op: Extract<Operator, { op: 'make-series' }>, rel: Relation): BoundStage {
    const axis = this.expr(op.axis, rel);
    if (axis.type !== 'datetime' && axis.type !== 'long' && axis.type !== 'real') this.fail(`make-series needs a datetime or numeric axis, not ${axis.type}`, op.axis.pos);
    const step = this.expr(op.step, rel);
    const stepValue = step.k === 'lit' ? step.value : null;
    if (axis.type === 'datetime' ? step.type !== 'timespan' : step.type !== 'long' && step.type !== 'real') this.fail(`make-series step must be a ${axis.type === 'datetime' ? 'timespan' : 'number'} constant`, op.step.pos);
    if (stepValue === null || !(Number(stepValue) > 0)) this.fail('make-series step must be a constant greater than 0', op.step.pos);
    const bound = (e: Expr | undefined) => {
      if (!e) return undefined;
      const b = this.expr(e, rel);
      if (b.type !== axis.type && !(axis.type !== 'datetime' && (b.type === 'long' || b.type === 'real'))) this.fail(`make-series from/to must be ${axis.type}`, e.pos);
      return b;
    };
    const from = bound(op.from);
    const to = bound(op.to);
    const names = new Map<string, number>();
    const unique = (n: string) => {
      const seen = names.get(n);
      names.set(n, (seen ?? 0) + 1);
      return seen === undefined ? n : `${n}${seen}`;
    };
    const keys: { alias: string; expr: BExpr }[] = [];
    const cols: BoundColumn[] = [];
    for (const k of op.by) {
      const e = this.expr(k.expr, rel);
      const alias = this.alias();
      keys.push({ alias, expr: e });
      cols.push({ name: unique(k.name ?? this.derivedName(k.expr, true)), type: e.type, alias });
    }
    const aggs: { alias: string; expr: BExpr; default: BExpr }[] = [];
    for (const a of op.aggs) {
      const e = this.expr(a.expr, rel, true);
      if (!containsAgg(e)) this.fail('make-series needs an aggregation function here, such as count() or avg(x)', a.expr.pos);
      const def = a.default ? this.expr(a.default, rel) : { k: 'lit' as const, type: e.type, value: e.type === 'long' ? 0n : e.type === 'real' ? 0 : null };
      if (def.k !== 'lit') this.fail('make-series default must be a constant', a.default!.pos);
      const alias = this.alias();
      aggs.push({ alias, expr: e, default: def });
      cols.push({ name: unique(a.name ?? this.aggName(a.expr)), type: 'dynamic', shape: 'array', alias, agg: this.aggMeta(e) });
    }
    const axisAlias = this.alias();
    cols.push({ name: unique(this.derivedName(op.axis, true)), type: 'dynamic', shape: 'array', alias: axisAlias });
    return {
      stage: { kind: 'series', keys, aggs, axis, axisAlias, step: stepValue as number | bigint, from, to },
      out: { columns: cols, rowIdentity: false, order: [], groups: cols.slice(0, keys.length).map((c) => c.name) },
    };
  }

  private mvExpand(op: Extract<Operator, { op: 'mv-expand' }>, rel: Relation): BoundStage {
    let cols = [...rel.columns];
    const items: { alias: string; expr: BExpr; bag: 'bag' | 'array'; toType?: AplType; limit?: number }[] = [];
    const replaced = new Set<string>();
    for (const item of op.items) {
      const e = this.expr(item.expr, rel);
      if (e.type !== 'dynamic') this.fail(`mv-expand expands dynamic arrays or bags, not ${e.type}`, item.expr.pos);
      const name = item.name ?? this.derivedName(item.expr, true);
      const type = item.toType ? TYPE_NAMES[item.toType]! : 'dynamic';
      const alias = this.alias();
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
      indexAlias = this.alias();
      cols = [...cols.filter((c) => c.name !== op.itemIndex), { name: op.itemIndex, type: 'long', alias: indexAlias }];
    }
    const keep = rel.columns.filter((c) => !replaced.has(c.alias) && cols.includes(c)).map((c) => c.alias);
    return { stage: { kind: 'expand', keep, items, indexAlias }, out: { columns: cols, rowIdentity: false, order: [], groups: [] } };
  }

  /** parse / parse-where: the pattern becomes one regular expression; each captured column is a group of it. */
  private parse(op: Extract<Operator, { op: 'parse' | 'parse-where' }>, rel: Relation, keep: (s: Stage, o?: Partial<Relation>) => BoundStage): BoundStage[] {
    const text = this.expr(op.expr, rel);
    const source: BExpr = text.type === 'string' ? text : { k: 'call', type: 'string', fn: 'tostring', args: [text], pos: op.pos };
    let re = op.kind === 'regex' ? '' : '^';
    const names: { name: string; type: AplType; group: number; pos: number }[] = [];
    const lastName = op.parts.map((p) => p.kind).lastIndexOf('name');
    op.parts.forEach((p, i) => {
      const last = i === op.parts.length - 1 || (i === lastName && op.parts.slice(i + 1).every((q) => q.kind === 'star'));
      if (p.kind === 'const') re += op.kind === 'regex' ? p.text : regexEscapeText(p.text);
      else if (p.kind === 'star') re += i === op.parts.length - 1 ? '.*' : '.*?';
      else {
        const type = p.type ? TYPE_NAMES[p.type]! : 'string';
        const group = type === 'long' && op.kind !== 'relaxed' ? '(-?\\d+)'
          : type === 'real' && op.kind !== 'relaxed' ? '(-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)'
            : last ? '(.*)' : '(.*?)';
        re += group;
        names.push({ name: p.name, type, group: names.length + 1, pos: p.pos });
      }
    });
    const pattern: BExpr = { k: 'lit', type: 'string', value: re };
    let cols = [...rel.columns];
    const items: { alias: string; expr: BExpr }[] = cols.map((c) => ({ alias: c.alias, expr: colRef(c) }));
    for (const n of names) {
      const alias = this.alias();
      const captured: BExpr = { k: 'call', type: 'string', fn: 'parse_capture#', args: [source, pattern, { k: 'lit', type: 'long', value: BigInt(n.group) }], pos: n.pos };
      const e: BExpr = n.type === 'string' ? captured : { k: 'call', type: n.type, fn: conversionFor(n.type), args: [captured], pos: n.pos };
      cols = setColumn(cols, items, { name: n.name, type: n.type, alias }, e);
    }
    const out: BoundStage[] = [];
    if (op.op === 'parse-where') out.push(keep({ kind: 'filter', predicate: { k: 'call', type: 'bool', fn: 'matches regex', args: [source, pattern], pos: op.pos } }));
    out.push(keep({ kind: 'select', items }, { columns: cols, order: remapOrder(rel.order, cols) }));
    return out;
  }

  private projectItems(items: Assignment[], rel: Relation, keep: (s: Stage, o: Partial<Relation>) => BoundStage): BoundStage {
    const cols: BoundColumn[] = [];
    const sel: { alias: string; expr: BExpr }[] = [];
    for (const a of items) {
      const e = this.expr(a.expr, rel);
      const name = a.name ?? this.derivedName(a.expr, true);
      if (cols.some((c) => c.name === name)) this.fail(`project lists the column "${name}" twice`, a.pos);
      const source = e.k === 'col' ? rel.columns.find((c) => c.alias === e.alias) : undefined;
      const alias = this.alias();
      cols.push({ name, type: e.type, alias, shape: shapeOf(e) ?? source?.shape, agg: source?.agg && !a.name ? source.agg : source?.agg });
      sel.push({ alias, expr: e });
    }
    return keep({ kind: 'select', items: sel }, { columns: cols, order: remapOrderBySelect(rel.order, sel, cols) });
  }

  private summarize(op: Extract<Operator, { op: 'summarize' }>, rel: Relation): BoundStage[] {
    const keys: { alias: string; expr: BExpr }[] = [];
    const cols: BoundColumn[] = [];
    const names = new Map<string, number>();
    const unique = (n: string) => {
      const seen = names.get(n);
      names.set(n, (seen ?? 0) + 1);
      return seen === undefined ? n : `${n}${seen}`;
    };
    let timeBin: Relation['timeBin'];
    for (const k of op.by) {
      const e = this.expr(k.expr, rel);
      const name = unique(k.name ?? this.derivedName(k.expr, true));
      const alias = this.alias();
      keys.push({ alias, expr: e });
      cols.push({ name, type: e.type, alias, shape: shapeOf(e) });
      const size = timeBinSize(e);
      if (!timeBin && size !== undefined) timeBin = { alias, name, sizeNs: size };
    }
    const aggs: { alias: string; expr: BExpr }[] = [];
    for (const a of op.aggs) {
      if (a.expr.kind === 'call' && a.expr.name === 'rate') {
        const { expr, meta } = this.rate(a.expr, rel, timeBin?.sizeNs);
        const alias = this.alias();
        aggs.push({ alias, expr });
        cols.push({ name: unique(a.name ?? this.aggName({ ...a.expr, name: 'sum' }).replace(/^sum_/, 'rate_')), type: 'real', alias, agg: meta });
        continue;
      }
      if (a.expr.kind === 'call' && (a.expr.name === 'arg_max' || a.expr.name === 'arg_min')) {
        this.argExtreme(a, a.expr, rel, keys.map((k, i) => ({ ...cols[i]!, expr: k.expr })), unique, aggs, cols);
        continue;
      }
      const e = this.expr(a.expr, rel, true);
      if (!containsAgg(e)) this.fail('summarize needs an aggregation function here, such as count() or avg(x)', a.expr.pos);
      const name = unique(a.name ?? this.aggName(a.expr));
      const alias = this.alias();
      aggs.push({ alias, expr: e });
      cols.push({ name, type: e.type, alias, shape: shapeOf(e), agg: this.aggMeta(e) });
    }
    const groups = cols.slice(0, keys.length).map((c) => c.name);
    const aggCols = cols.slice(keys.length);
    const order: OrderKey[] = [];
    if (timeBin) order.push({ expr: { k: 'col', type: 'datetime', alias: timeBin.alias, name: timeBin.name }, desc: false, nullsFirst: false, field: timeBin.name });
    const firstAgg = aggCols[0];
    if (firstAgg && (firstAgg.type === 'long' || firstAgg.type === 'real' || firstAgg.type === 'timespan')) {
      order.push({ expr: colRef(firstAgg), desc: true, nullsFirst: false, field: firstAgg.name });
    }
    for (const c of cols.slice(0, keys.length)) if (c.alias !== timeBin?.alias) order.push({ expr: colRef(c), desc: false, nullsFirst: false });
    return [{
      stage: { kind: 'aggregate', keys, aggs },
      out: { columns: cols, rowIdentity: false, order, timeBin, groups },
    }];
  }

  /**
   * rate(x [, per]): the sum of x per second (or per `per`) over each time bucket of the summary, or over the
   * query's time range when the summary has no time bin.
   */
  private rate(call: Extract<Expr, { kind: 'call' }>, rel: Relation, bucketNs: bigint | undefined): { expr: BExpr; meta: AggMeta } {
    if (call.args.length < 1 || call.args.length > 2) this.fail('rate() takes a value and optionally the interval to count per, such as 1m', call.pos);
    const x = this.expr(call.args[0]!, rel);
    let perNs = 1_000_000_000n;
    if (call.args[1]) {
      const p = this.expr(call.args[1], rel);
      if (p.k !== 'lit' || p.type !== 'timespan' || typeof p.value !== 'bigint' || p.value <= 0n) this.fail('rate(): the interval must be a positive timespan constant', call.args[1].pos);
      perNs = p.value as bigint;
    }
    if (bucketNs === undefined) this.rangeLengthUsed = true;
    const windowNs = bucketNs ?? this.opts.rangeNs;
    const sum: BExpr = { k: 'agg', type: 'real', fn: 'sum', args: [x.type === 'long' || x.type === 'real' ? x : { k: 'call', type: 'real', fn: 'toreal', args: [x], pos: call.pos }], pos: call.pos };
    const factor: BExpr = { k: 'lit', type: 'real', value: Number(perNs) / Number(windowNs > 0n ? windowNs : 1n) };
    return {
      expr: { k: 'call', type: 'real', fn: '*', args: [{ k: 'call', type: 'real', fn: 'toreal', args: [sum], pos: call.pos }, factor], pos: call.pos },
      meta: { name: 'rate', fields: x.k === 'col' ? [x.name] : [], args: call.args[1] ? [Number(perNs)] : [] },
    };
  }

  /**
   * arg_max(e, c1, c2…) / arg_min: the row where e is largest (smallest), as columns e, c1, c2 (`*`: every
   * column not already a group key).
   */
  private argExtreme(
    a: Assignment, call: Extract<Expr, { kind: 'call' }>, rel: Relation, keyCols: (BoundColumn & { expr: BExpr })[],
    unique: (n: string) => string, aggs: { alias: string; expr: BExpr }[], cols: BoundColumn[],
  ): void {
    const [first, ...rest] = call.args;
    if (!first || rest.length === 0) this.fail(`${call.name}() takes the expression to maximise and at least one column or *`, call.pos);
    const by = this.expr(first, rel);
    if (by.type === 'dynamic' || by.type === 'bool') this.fail(`${call.name}(): cannot order by a ${by.type} value`, first.pos);
    const isMax = call.name === 'arg_max';
    const meta: AggMeta = { name: isMax ? 'argmax' : 'argmin', fields: [], args: [] };
    const keyNames = new Set(keyCols.map((k) => k.name));
    const byName = a.name ?? this.derivedName(first, true);
    const add = (name: string, e: BExpr, fn: string) => {
      const alias = this.alias();
      aggs.push({ alias, expr: { k: 'agg', type: e.type, fn, args: fn === (isMax ? 'max' : 'min') ? [e] : [e, by], pos: call.pos } });
      cols.push({ name: unique(name), type: e.type, alias, shape: shapeOf(e), agg: meta });
      meta.fields.push(name);
    };
    add(byName, by, isMax ? 'max' : 'min');
    for (const arg of rest) {
      if (arg.kind === 'star') {
        for (const c of rel.columns) if (!keyNames.has(c.name) && c.name !== byName) add(c.name, colRef(c), isMax ? 'arg_max#' : 'arg_min#');
      } else add(this.derivedName(arg, true), this.expr(arg, rel), isMax ? 'arg_max#' : 'arg_min#');
    }
  }

  /** For a summary by a time bin: the same pipeline, summarized without the time key (the `_totals` table). */
  private totalsStages(stages: BoundStage[]): BoundStage[] | undefined {
    let idx = -1;
    stages.forEach((s, i) => {
      if (s.stage.kind === 'aggregate') idx = i;
    });
    if (idx < 0) return undefined;
    const agg = stages[idx]!;
    if (!agg.out.timeBin || agg.stage.kind !== 'aggregate') return undefined;
    // Only when nothing but ordering and limits follow the summary: otherwise totals would not describe the result.
    if (stages.slice(idx + 1).some((s) => s.stage.kind !== 'order' && s.stage.kind !== 'limit' && s.stage.kind !== 'top-groups')) return undefined;
    const timeAlias = agg.out.timeBin.alias;
    const keys = agg.stage.keys.filter((k) => k.alias !== timeAlias);
    const columns = agg.out.columns.filter((c) => c.alias !== timeAlias);
    const order = agg.out.order.filter((o) => !(o.expr.k === 'col' && o.expr.alias === timeAlias));
    const totals: BoundStage = {
      stage: { kind: 'aggregate', keys, aggs: agg.stage.aggs },
      out: { columns, rowIdentity: false, order, groups: agg.out.groups.filter((g) => g !== agg.out.timeBin!.name) },
    };
    return [...stages.slice(0, idx), totals];
  }

  private aggMeta(e: BExpr): AggMeta {
    if (e.k !== 'agg') return { name: 'computed', fields: [], args: [] };
    const fn = AGGREGATE_FUNCTIONS[e.fn]!;
    const fields: string[] = [];
    const args: unknown[] = [];
    e.args.forEach((a, i) => {
      if (fn.constantArgs?.includes(i) && a.k === 'lit') args.push(jsonLiteral(a.value));
      else if (fn.predicateArgs?.includes(i)) return;
      else if (a.k === 'col') fields.push(a.name);
    });
    return { name: fn.op, fields, args };
  }

  /** `<prefix>_<argument>` (count_, avg_x, percentile_x_95), or ColumnN for other expressions. */
  private aggName(e: Expr): string {
    if (e.kind !== 'call' || !AGGREGATE_FUNCTIONS[e.name]) return this.nextColumnName();
    const fn = AGGREGATE_FUNCTIONS[e.name]!;
    const first = e.args[0] && !fn.predicateArgs?.includes(0) ? this.derivedName(e.args[0], false) : '';
    let name = `${fn.prefix}_${first}`;
    if ((e.name === 'percentile' || e.name === 'percentileif') && e.args[1]?.kind === 'literal') name += `_${String(e.args[1].value).replace('.', '_')}`;
    return name;
  }

  private nextColumnName(): string {
    return `Column${++this.columnSeq}`;
  }

  /** The output name of an unnamed expression (apl.md 4.4). */
  private derivedName(e: Expr, allocate: boolean): string {
    switch (e.kind) {
      case 'name': return e.name;
      case 'member':
      case 'index': {
        const parts: string[] = [];
        let cur: Expr = e;
        while (cur.kind === 'member' || cur.kind === 'index') {
          if (cur.kind === 'member') parts.unshift(cur.name);
          else {
            const idx = (cur as Extract<Expr, { kind: 'index' }>).index;
            if (idx.kind === 'literal') parts.unshift(String(idx.value));
          }
          cur = cur.target;
        }
        if (cur.kind === 'name') {
          if (e.kind === 'member' && !cur.quoted) return [cur.name, ...parts].join('.');
          return [cur.name, ...parts].join('_');
        }
        return allocate ? this.nextColumnName() : '';
      }
      case 'call':
        if (NAME_PRESERVING.has(e.name) && e.args[0]) return this.derivedName(e.args[0], allocate);
        if (e.args[0] && (e.args[0].kind === 'name')) return `${e.name}_${e.args[0].name}`;
        return allocate ? this.nextColumnName() : '';
      default:
        return allocate ? this.nextColumnName() : '';
    }
  }

  private distinctColumn(e: Expr, rel: Relation): BoundColumn {
    const b = this.expr(e, rel);
    return { name: this.derivedName(e, true), type: b.type, alias: this.alias(), shape: shapeOf(b) };
  }

  private orderKey(k: SortKey, rel: Relation): OrderKey {
    const e = this.expr(k.expr, rel);
    const nullsFirst = k.nulls ? k.nulls === 'first' : !k.desc; // KQL: nulls first ascending, last descending
    return { expr: e, desc: k.desc, nullsFirst, field: e.k === 'col' ? e.name : undefined };
  }

  private constantCount(e: Expr, rel: Relation, op: string): number {
    const b = this.expr(e, rel);
    if (b.k !== 'lit' || b.type !== 'long' || b.value === null || (b.value as bigint) < 0n) this.fail(`${op} needs a constant row count of 0 or more`, e.pos);
    return Number(b.value as bigint);
  }

  private matchPatterns(patterns: NamePattern[], rel: Relation, mustMatch: boolean): BoundColumn[] {
    const out: BoundColumn[] = [];
    for (const p of patterns) {
      const matched = p.wildcard ? rel.columns.filter((c) => wildcardRegex(p.pattern).test(c.name)) : rel.columns.filter((c) => c.name === p.pattern);
      if (matched.length === 0 && (!p.wildcard || mustMatch)) this.fail(`no column matches "${p.pattern}"`, p.pos);
      for (const c of matched) if (!out.includes(c)) out.push(c);
    }
    return out;
  }

  // ---- expressions ---------------------------------------------------------------------------------------

  expr(e: Expr, rel: Relation, allowAgg = false): BExpr {
    switch (e.kind) {
      case 'literal':
        return { k: 'lit', type: e.type, value: e.value };
      case 'typeof':
        return this.fail('typeof() is only allowed as an argument of functions that take a type', e.pos);
      case 'star':
        return this.fail('"*" is not allowed here', e.pos);
      case 'name':
        return this.name(e, rel);
      case 'member':
      case 'index':
        return this.access(e, rel);
      case 'unary': {
        const x = this.expr(e.operand, rel, allowAgg);
        if (e.op === '+') return x;
        if (x.k === 'lit' && x.value !== null && (typeof x.value === 'bigint' || typeof x.value === 'number')) return { ...x, value: -x.value as never };
        return this.op('unary-', [x], e.pos);
      }
      case 'binary': {
        if (e.left.kind === 'star') {
          // `where * has "x"`: the test applied to every column (apl.md 2.1).
          if (e.right.kind !== 'literal' || typeof e.right.value !== 'string') this.fail('"*" on the left needs a string constant on the right', e.right.pos);
          if (!OPERATORS[e.op] || !/^!?[a-z_]+|matches regex$/.test(e.op) || e.op === 'and' || e.op === 'or') this.fail(`"*" works with string operators such as has or contains, not "${e.op}"`, e.pos);
          return this.anyColumn({ op: e.op, text: e.right.value as string }, rel, e.pos);
        }
        if (e.op === 'matches regex' || e.op === '!matches regex') {
          return this.op(e.op, [this.expr(e.left, rel, allowAgg), this.expr(e.right, rel, allowAgg)], e.pos);
        }
        const left = this.expr(e.left, rel, allowAgg);
        const right = this.expr(e.right, rel, allowAgg);
        if (left.type === 'datetime' && right.k === 'lit' && right.type === 'string' && typeof right.value === 'string' && COMPARISON.has(e.op)) {
          return this.op(e.op, [left, this.datetimeConstant(right.value, e.right.pos)], e.pos);
        }
        return this.op(e.op, [left, right], e.pos);
      }
      case 'list':
        return this.list(e, rel, allowAgg);
      case 'between': {
        const left = this.expr(e.left, rel, allowAgg);
        let low = this.expr(e.low, rel, allowAgg);
        let high = this.expr(e.high, rel, allowAgg);
        if (left.type === 'datetime' && high.type === 'timespan' && low.type === 'datetime') {
          high = this.op('+', [low, high], e.high.pos);
        }
        for (const [b, pos] of [[low, e.low.pos], [high, e.high.pos]] as const) {
          try {
            OPERATORS['<=']!.returns([left, b], this.typeCtx);
          } catch (err) {
            this.fail(`between: ${(err as Error).message}`, pos);
          }
        }
        if (left.type === 'datetime' && low.k === 'lit' && low.type === 'string') low = this.datetimeConstant(String(low.value), e.low.pos);
        return { k: 'between', type: 'bool', negated: e.negated, left, low, high };
      }
      case 'call':
        return this.call(e, rel, allowAgg);
    }
  }

  private datetimeConstant(text: string, pos: number): BExpr {
    const ns = parseDatetimeText(text);
    if (ns === null) this.fail(`"${text}" is not a datetime`, pos);
    return { k: 'lit', type: 'datetime', value: ns };
  }

  private op(name: string, args: BExpr[], pos: number): BExpr {
    const fn = OPERATORS[name];
    if (!fn) return this.fail(`unknown operator "${name}"`, pos);
    try {
      const type = fn.returns(args.map(argInfo), this.typeCtx);
      trialSql(fn, args);
      return { k: 'call', type, fn: name, args, pos };
    } catch (err) {
      if (err instanceof ArgumentError) this.fail(err.message, pos);
      throw err;
    }
  }

  private name(e: Extract<Expr, { kind: 'name' }>, rel: Relation): BExpr {
    const col = rel.columns.find((c) => c.name === e.name);
    if (col) return colRef(col);
    const letValue = this.lets.get(e.name);
    if (letValue?.kind === 'scalar') return letValue.expr;
    if (letValue) this.fail(`"${e.name}" is a table, not a scalar`, e.pos);
    if (!e.quoted && (e.name === 'null')) return { k: 'lit', type: 'dynamic', value: null };
    return this.fail(`unknown column or variable "${e.name}"`, e.pos);
  }

  /** `a.b.c` (a flat dotted column first, then member access into a dynamic column), `m['k']`, `arr[0]`. */
  private access(e: Extract<Expr, { kind: 'member' | 'index' }>, rel: Relation): BExpr {
    const chain: Extract<Expr, { kind: 'member' | 'index' }>[] = [];
    let root: Expr = e;
    while (root.kind === 'member' || root.kind === 'index') {
      chain.unshift(root as Extract<Expr, { kind: 'member' | 'index' }>);
      root = root.target;
    }
    // Unquoted a.b.c: the longest prefix that names a column wins (`geo.city` is usually a flat column).
    let start = 0;
    let base: BExpr | undefined;
    if (root.kind === 'name') {
      let name = root.name;
      if (!this.lets.has(name)) {
        for (let i = 0; i < chain.length; i++) {
          const link = chain[i]!;
          if (link.kind !== 'member') break;
          name += `.${link.name}`;
          const col = rel.columns.find((c) => c.name === name);
          if (col) {
            base = colRef(col);
            start = i + 1;
          }
        }
      }
    }
    if (!base) base = this.expr(root, rel);
    if (start === chain.length) return base;
    if (base.type !== 'dynamic') this.fail(`"${this.derivedName(root, false) || 'this value'}" is ${base.type}; only dynamic values (maps, arrays) have members`, chain[start]!.pos);
    const path: (string | number | BExpr)[] = [];
    for (const link of chain.slice(start)) {
      if (link.kind === 'member') path.push(link.name);
      else {
        const idx = this.expr(link.index, rel);
        if (idx.k === 'lit' && typeof idx.value === 'string') path.push(idx.value);
        else if (idx.k === 'lit' && typeof idx.value === 'bigint') path.push(Number(idx.value));
        else if (idx.type === 'string' || idx.type === 'long') path.push(idx);
        else this.fail('an index must be a string key or an integer position', link.pos);
      }
    }
    return { k: 'path', type: 'dynamic', target: base, path };
  }

  private list(e: Extract<Expr, { kind: 'list' }>, rel: Relation, allowAgg: boolean): BExpr {
    const left = this.expr(e.left, rel, allowAgg);
    const items: BExpr[] = [];
    for (const item of e.items) {
      const b = this.expr(item, rel, allowAgg);
      // dynamic arrays in the list are flattened (apl.md 4.13).
      if (b.k === 'lit' && b.type === 'dynamic' && Array.isArray(b.value)) items.push(...flattenDynamic(b.value).map(literalOfJs));
      else items.push(b);
    }
    if (e.op === 'has_any' || e.op === 'has_any_cs' || e.op === 'has_all') {
      if (e.op === 'has_all') this.fail('has_all is not an APL operator; use has for each term', e.pos);
      const terms = items.map((i) => {
        if (i.k !== 'lit' || i.value === null) this.fail('has_any takes constant terms', e.pos);
        return String(i.value);
      });
      return { k: 'has_any', type: 'bool', left, terms, caseSensitive: e.op === 'has_any_cs' };
    }
    return { k: 'in', type: 'bool', op: e.op, left, items };
  }

  private call(e: Extract<Expr, { kind: 'call' }>, rel: Relation, allowAgg: boolean): BExpr {
    if (e.name === 'now' || e.name === 'ago') return this.timeConstant(e, rel);
    if (e.name === 'bin_auto') {
      if (e.args.length !== 1) this.fail('bin_auto() takes one argument, the time column', e.pos);
      const v = this.expr(e.args[0]!, rel);
      if (v.type !== 'datetime') this.fail('bin_auto() bins a datetime, such as _time', e.args[0]!.pos);
      this.binAutoUsed = true;
      return { k: 'call', type: 'datetime', fn: 'bin', args: [v, { k: 'lit', type: 'timespan', value: this.opts.binAutoNs }], pos: e.pos };
    }
    if (e.name === 'column_ifexists') {
      const [n, def] = e.args;
      if (!n || n.kind !== 'literal' || typeof n.value !== 'string' || !def) this.fail('column_ifexists() takes a column name and a default value', e.pos);
      const col = rel.columns.find((c) => c.name === n.value);
      return col ? colRef(col) : this.expr(def, rel, allowAgg);
    }
    const agg = AGGREGATE_FUNCTIONS[e.name];
    if (agg) {
      if (!allowAgg) this.fail(`the aggregation ${e.name}() is only allowed in summarize`, e.pos);
      const args = e.args.map((a) => this.expr(a, rel, false));
      this.arity(e, agg.minArgs, agg.maxArgs);
      try {
        const type = agg.returns(args.map(argInfo), this.typeCtx);
        trialSql(agg, args);
        return { k: 'agg', type, fn: e.name, args, pos: e.pos };
      } catch (err) {
        if (err instanceof ArgumentError) this.fail(`${e.name}(): ${err.message}`, e.pos);
        throw err;
      }
    }
    const fn = SCALAR_FUNCTIONS[e.name];
    if (!fn) {
      if (KNOWN_AGGREGATES_UNSUPPORTED.has(e.name)) this.fail(`the aggregation ${e.name}() is not supported by this service`, e.pos);
      const why = UNSUPPORTED_FUNCTIONS[e.name];
      if (why) this.fail(`the function ${e.name}() is not supported by this service: ${why}`, e.pos);
      return this.fail(`unknown function "${e.name}"`, e.pos);
    }
    this.arity(e, fn.minArgs, fn.maxArgs);
    const args = e.args.map((a) => this.expr(a, rel, allowAgg));
    try {
      const type = fn.returns(args.map(argInfo), this.typeCtx);
      trialSql(fn, args);
      return { k: 'call', type, fn: e.name, args, pos: e.pos };
    } catch (err) {
      if (err instanceof ArgumentError) this.fail(`${e.name}(): ${err.message}`, e.pos);
      throw err;
    }
  }

  private arity(e: Extract<Expr, { kind: 'call' }>, min: number, max: number): void {
    const n = e.args.length;
    if (n < min || n > max) {
      const want = min === max ? `${min}` : max > 60 ? `at least ${min}` : `${min} to ${max}`;
      this.fail(`${e.name}() takes ${want} argument${want === '1' ? '' : 's'}, not ${n}`, e.pos);
    }
  }

  /** now([offset]) and ago(span) are evaluated once per query, so they fold to constants. */
  private timeConstant(e: Extract<Expr, { kind: 'call' }>, rel: Relation): BExpr {
    if (e.name === 'ago' && e.args.length !== 1) this.fail('ago() takes one timespan argument', e.pos);
    if (e.name === 'now' && e.args.length > 1) this.fail('now() takes at most one timespan argument', e.pos);
    const arg = e.args[0] ? this.expr(e.args[0], rel) : undefined;
    if (arg && arg.type !== 'timespan' && arg.type !== 'long') this.fail(`${e.name}() takes a timespan, such as 1h`, e.args[0]!.pos);
    if (!arg || (arg.k === 'lit' && arg.value !== null)) {
      const offset = arg ? (arg as { value: bigint }).value : 0n;
      return { k: 'lit', type: 'datetime', value: e.name === 'ago' ? this.opts.nowNs - offset : this.opts.nowNs + offset };
    }
    const now: BExpr = { k: 'lit', type: 'datetime', value: this.opts.nowNs };
    return this.op(e.name === 'ago' ? '-' : '+', [now, arg], e.pos);
  }
}

const COMPARISON = new Set(['==', '!=', '<', '<=', '>', '>=']);

const KNOWN_AGGREGATES_UNSUPPORTED = new Set([
  'topkif', 'percentiles_arrayif', 'spotlight', 'phrases', 'make_bag',
]);

/** Functions of the docs that Ferry does not run, with the reason a user is told. */
const UNSUPPORTED_FUNCTIONS: Record<string, string> = {
  externaldata: 'Ferry does not fetch URLs while querying',
};

/**
 * Sets a column of a projection: an existing name is replaced in place (KQL; apl.md 4.11), a new one is
 * appended. `items` (the select list, aligned with the columns) is updated in place.
 */
function setColumn(cols: BoundColumn[], items: { alias: string; expr: BExpr }[], col: BoundColumn, expr: BExpr): BoundColumn[] {
  const at = cols.findIndex((c) => c.name === col.name);
  if (at < 0) {
    items.push({ alias: col.alias, expr });
    return [...cols, col];
  }
  const out = [...cols];
  out[at] = col;
  items[at] = { alias: col.alias, expr };
  return out;
}

/**
 * Builds a call's SQL once with placeholder operands: a function that needs a constant (a date part, a
 * percentile) reports a bad one here, as an ArgumentError with the call's position, not later as a 500.
 */
function trialSql(fn: { sql(args: SqlArg[], ctx: { filter: boolean }): string }, args: BExpr[]): void {
  fn.sql(args.map((a) => ({ sql: 'x', type: a.type, constant: a.k === 'lit' ? { value: a.value } : undefined })), { filter: false });
}

function colRef(c: BoundColumn): BExpr {
  return { k: 'col', type: c.type, alias: c.alias, name: c.name, shape: c.shape };
}

function selectOf(cols: BoundColumn[]): Stage {
  return { kind: 'select', items: cols.map((c) => ({ alias: c.alias, expr: colRef(c) })) };
}

const ARRAY_RESULTS = new Set(['topk', 'histogram', 'histogramif', 'percentiles_array', 'make_list', 'make_set', 'make_list_if', 'make_set_if', 'split', 'pack_array', 'array_concat', 'array_slice', 'bag_keys', 'extract_all']);
const BAG_RESULTS = new Set(['bag_pack', 'pack', 'pack_dictionary', 'parse_url', 'geo_info_from_ip_address']);

function shapeOf(e: BExpr): DynamicShape {
  if (e.k === 'col') return e.shape;
  if ((e.k === 'agg' || e.k === 'call') && ARRAY_RESULTS.has(e.fn)) return 'array';
  if (e.k === 'call' && BAG_RESULTS.has(e.fn)) return 'dictionary';
  return undefined;
}

function argInfo(b: BExpr): ArgInfo {
  return { type: b.type, constant: b.k === 'lit' ? { value: b.value } : undefined, column: b.k === 'col' ? b.name : undefined };
}

function containsAgg(e: BExpr): boolean {
  switch (e.k) {
    case 'agg': return true;
    case 'call': return e.args.some(containsAgg);
    case 'in': return containsAgg(e.left) || e.items.some(containsAgg);
    case 'between': return containsAgg(e.left) || containsAgg(e.low) || containsAgg(e.high);
    case 'has_any': return containsAgg(e.left);
    case 'path': return containsAgg(e.target);
    default: return false;
  }
}

/** The size of a time bin expression (bin(_time, 1h) or bin_auto(_time)), or undefined. */
function timeBinSize(e: BExpr): bigint | undefined {
  if (e.k === 'call' && e.fn === 'bin' && e.type === 'datetime') {
    const size = e.args[1];
    if (size?.k === 'lit' && typeof size.value === 'bigint') return size.value;
  }
  return undefined;
}

/** Keeps the order keys that still exist after a projection (columns carried under the same alias). */
function remapOrder(order: OrderKey[], after: BoundColumn[]): OrderKey[] {
  const aliases = new Set(after.map((c) => c.alias));
  return order.filter((o) => o.expr.k === 'hidden' || (o.expr.k === 'col' && aliases.has(o.expr.alias)));
}

/** After a project, order keys refer to the projected aliases of the same columns, or are dropped. */
function remapOrderBySelect(order: OrderKey[], sel: { alias: string; expr: BExpr }[], cols: BoundColumn[]): OrderKey[] {
  const out: OrderKey[] = [];
  for (const o of order) {
    if (o.expr.k === 'hidden') {
      out.push(o);
      continue;
    }
    if (o.expr.k !== 'col') continue;
    const i = sel.findIndex((s) => s.expr.k === 'col' && s.expr.alias === (o.expr as { alias: string }).alias);
    if (i < 0) break; // the order is only kept as a prefix of its keys
    out.push({ ...o, expr: colRef(cols[i]!), field: cols[i]!.name });
  }
  return out;
}

/** Sorting keeps the stream's own order as the tie-break, so results are deterministic. */
function withTieBreak(keys: OrderKey[], rel: Relation): OrderKey[] {
  if (!rel.rowIdentity) return keys;
  // In the direction of the first key, so that `sort by _time asc` is ascending in (time, sequence): cursors rely on it.
  const desc = keys[0]?.desc ?? true;
  return [...keys,
    { expr: { k: 'hidden', type: 'datetime', alias: '__t' }, desc, nullsFirst: false },
    { expr: { k: 'hidden', type: 'long', alias: '__s' }, desc, nullsFirst: false }];
}

function matchedPrefixLength(stages: BoundStage[]): number {
  // Rows are counted from the last stage that produces rows from its own inputs (a scan or a union).
  let i = 1;
  stages.forEach((s, k) => {
    if (s.stage.kind === 'union') i = k + 1;
  });
  const rowPreserving = (s: Stage) => s.kind === 'filter' || s.kind === 'select' || (s.kind === 'order' && s.limit === undefined);
  while (i < stages.length && rowPreserving(stages[i]!.stage)) i++;
  return i;
}

function matchedModeOf(stages: BoundStage[], prefix: number): BoundQuery['matchedMode'] {
  if (stages[0]!.stage.kind !== 'scan' || stages.some((s) => s.stage.kind === 'union' || s.stage.kind === 'join')) return 'query';
  if (!stages.slice(1, prefix).some((s) => s.stage.kind === 'filter')) return 'examined';
  const boundary = stages[prefix]?.stage;
  if (!boundary) return 'query';
  if (boundary.kind === 'count' && prefix === stages.length - 1) return 'count';
  // The count rides along only while every later stage passes its column through unchanged.
  const passThrough = stages.slice(prefix + 1).every((s) => s.stage.kind === 'order' || s.stage.kind === 'limit' || s.stage.kind === 'top-groups');
  if (!passThrough) return 'query';
  if (boundary.kind === 'aggregate') return 'window';
  // A window over the matched rows themselves costs more than a second scan (bench:query: 227 against 121 ms
  // for a materialised CTE); DuckDB runs one query at a time here (threads = 1), so a count query adds its
  // whole scan.
  return boundary.kind === 'order' || boundary.kind === 'limit' ? 'cte' : 'query';
}

function wildcardRegex(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

function sortNames(cols: BoundColumn[], order: 'asc' | 'desc' | 'granny-asc' | 'granny-desc'): BoundColumn[] {
  const natural = order.startsWith('granny');
  const cmp = (a: BoundColumn, b: BoundColumn) => (natural ? a.name.localeCompare(b.name, undefined, { numeric: true }) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const sorted = [...cols].sort(cmp);
  return order.endsWith('desc') ? sorted.reverse() : sorted;
}

function flattenDynamic(v: unknown[]): unknown[] {
  return v.flatMap((x) => (Array.isArray(x) ? flattenDynamic(x) : [x]));
}

function literalOfJs(v: unknown): BExpr {
  if (typeof v === 'string') return { k: 'lit', type: 'string', value: v };
  if (typeof v === 'boolean') return { k: 'lit', type: 'bool', value: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { k: 'lit', type: 'long', value: BigInt(v) } : { k: 'lit', type: 'real', value: v };
  return { k: 'lit', type: 'dynamic', value: v as LiteralValue };
}

function jsonLiteral(v: LiteralValue): unknown {
  return typeof v === 'bigint' ? Number(v) : v;
}

function conversionFor(t: AplType): string {
  return { string: 'tostring', long: 'tolong', real: 'toreal', bool: 'tobool', datetime: 'todatetime', timespan: 'totimespan', dynamic: 'todynamic' }[t];
}

/** The dataset a pipeline reads, for union's withsource column. */
function sourceName(stages: BoundStage[]): string | undefined {
  const first = stages[0]!.stage;
  return first.kind === 'scan' ? first.dataset : undefined;
}

/** A search term as an operator: "x" has, "x*" hasprefix, "*x" hassuffix, "*x*" contains, other wildcards a regex. */
function searchTerm(term: string, caseSensitive: boolean): { op: string; text: string } {
  const cs = caseSensitive ? '_cs' : '';
  const inner = term.replace(/^\*/, '').replace(/\*$/, '');
  if (!/[*?]/.test(inner)) {
    if (term.startsWith('*') && term.endsWith('*') && term.length > 1) return { op: `contains${cs}`, text: inner };
    if (term.endsWith('*')) return { op: `hasprefix${cs}`, text: inner };
    if (term.startsWith('*')) return { op: `hassuffix${cs}`, text: inner };
    return { op: `has${cs}`, text: term };
  }
  const body = term.split('').map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : regexEscapeText(ch))).join('');
  return { op: 'matches regex', text: `${caseSensitive ? '' : '(?i)'}\\b${body}\\b` };
}

function regexEscapeText(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}]/g, (c) => `\\${c}`);
}

