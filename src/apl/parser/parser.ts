/**
 * The APL parser: tokens → syntax tree (./ast.ts), by recursive descent. Keywords are case-sensitive, as in
 * APL (`WHERE` is an error). Errors name what was expected and where.
 */
import { AplError } from '../errors.js';
import { tokenize } from '../lexer/lexer.js';
import type { Token } from '../lexer/tokens.js';
import { parseRfc3339Ns } from '../../util/time.js';
import type {
  Assignment,
  DynamicValue,
  Expr,
  LiteralType,
  NamePattern,
  ProjectItem,
  Operator,
  ParsePart,
  Query,
  SortKey,
  Source,
  Statement,
  TableRef,
  TabularExpr,
} from './ast.js';
import { lookupTable } from '../../util/lookup.js';

/** Binary operators on strings and sets, at the precedence of comparisons. */
export const STRING_OPERATORS = new Set([
  'contains',
  '!contains',
  'contains_cs',
  '!contains_cs',
  'startswith',
  '!startswith',
  'startswith_cs',
  '!startswith_cs',
  'endswith',
  '!endswith',
  'endswith_cs',
  '!endswith_cs',
  'has',
  '!has',
  'has_cs',
  '!has_cs',
  'hasprefix',
  '!hasprefix',
  'hasprefix_cs',
  '!hasprefix_cs',
  'hassuffix',
  '!hassuffix',
  'hassuffix_cs',
  '!hassuffix_cs',
]);
const LIST_OPERATORS = new Set(['in', '!in', 'in~', '!in~', 'has_any', 'has_any_cs', 'has_all']);
const COMPARISONS = new Set(['==', '!=', '<>', '<', '<=', '>', '>=', '=~', '!~']);

/** Tabular operators the engine knows by name but does not run yet: they answer a clear 400. */
const KNOWN_UNSUPPORTED_OPERATORS = new Set([
  'as',
  'serialize',
  'render',
  'fork',
  'facet',
  'evaluate',
  'invoke',
  'mv-apply',
  'partition',
  'range',
  'reduce',
  'scan',
  'sample-distinct',
  'top-nested',
  'top-hitters',
  'find',
]);

/** Type names accepted by typed literals and schemas. */
export const TYPE_NAMES: Record<string, LiteralType> = lookupTable({
  string: 'string',
  int: 'long',
  long: 'long',
  real: 'real',
  double: 'real',
  decimal: 'real',
  bool: 'bool',
  boolean: 'bool',
  datetime: 'datetime',
  date: 'datetime',
  timespan: 'timespan',
  time: 'timespan',
  dynamic: 'dynamic',
});

/** How deep the parser lets a query nest, and the setting a refusal names so the user knows what to raise. */
export interface ParseLimits {
  maxDepth: number;
  setting?: string;
}

export function parseQuery(source: string, limits?: ParseLimits): Query {
  return new Parser(source, limits).query();
}

/**
 * Parses operators without a source (`where status >= 500 | extend slow = d > 1s`), with `let` statements
 * before them: the pipeline an agent's `apl` transform runs over each event. The body's source is a table
 * with no name (the event).
 */
export function parsePipeline(source: string, limits?: ParseLimits): Query {
  return new Parser(source, limits).pipeline();
}

/** Parses a single expression (used by tests and by the legacy query endpoint's virtual fields). */
export function parseExpression(source: string, limits?: ParseLimits): Expr {
  const p = new Parser(source, limits);
  const e = p.expression();
  p.expectEnd();
  return e;
}

class Parser {
  private readonly toks: Token[];
  private i = 0;
  private nesting = 0;
  private expressionNesting = 0;
  private readonly maxDepth: number;
  private readonly depthLimit: string;

  constructor(
    private readonly src: string,
    limits?: ParseLimits,
  ) {
    this.toks = tokenize(src);
    // Never above the hard cap: the binder and compiler walk the tree recursively.
    this.maxDepth = Math.min(limits?.maxDepth ?? MAX_DEPTH, MAX_DEPTH);
    this.depthLimit = `more than ${this.maxDepth} levels${limits?.setting ? `, ${limits.setting}` : ''}`;
  }

  // ---- token helpers ------------------------------------------------------------------------------------

  private peek(k = 0): Token {
    return this.toks[Math.min(this.i + k, this.toks.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.i++;
    return t;
  }

  private isPunct(text: string, k = 0): boolean {
    const t = this.peek(k);
    return t.kind === 'punct' && t.text === text;
  }

  private isWord(text: string, k = 0): boolean {
    const t = this.peek(k);
    return t.kind === 'ident' && t.text === text;
  }

  private acceptPunct(text: string): boolean {
    if (!this.isPunct(text)) return false;
    this.i++;
    return true;
  }

  private acceptWord(text: string): boolean {
    if (!this.isWord(text)) return false;
    this.i++;
    return true;
  }

  fail(message: string, at: Token | number = this.peek()): never {
    throw new AplError(message, this.src, typeof at === 'number' ? at : at.pos);
  }

  private describe(t: Token): string {
    return t.kind === 'eof' ? 'the end of the query' : `"${t.text}"`;
  }

  private expectPunct(text: string): Token {
    if (!this.isPunct(text)) this.fail(`expected "${text}" but found ${this.describe(this.peek())}`);
    return this.next();
  }

  private expectWord(text: string): Token {
    if (!this.isWord(text)) this.fail(`expected "${text}" but found ${this.describe(this.peek())}`);
    return this.next();
  }

  expectEnd(): void {
    if (this.peek().kind !== 'eof') this.fail(`unexpected ${this.describe(this.peek())}`);
  }

  private ident(what: string): Token {
    const t = this.peek();
    if (t.kind !== 'ident' || t.text.startsWith('!')) this.fail(`expected ${what} but found ${this.describe(t)}`);
    return this.next();
  }

  /** A column or table name: bare identifier, or ['quoted'] / ["quoted"]. */
  private nameToken(what: string): { name: string; pos: number; quoted: boolean } {
    const t = this.peek();
    if (t.kind === 'punct' && t.text === '[' && this.peek(1).kind === 'string' && this.isPunct(']', 2)) {
      this.i += 3;
      return { name: this.peek(-2).value as string, pos: t.pos, quoted: true };
    }
    const id = this.ident(what);
    return { name: id.text, pos: id.pos, quoted: false };
  }

  private isNameStart(): boolean {
    const t = this.peek();
    return (
      (t.kind === 'ident' && !t.text.startsWith('!')) ||
      (t.kind === 'punct' && t.text === '[' && this.peek(1).kind === 'string' && this.isPunct(']', 2))
    );
  }

  /** True when the tokens ahead are `name =` (an assignment, not a comparison). */
  private atAssignment(): boolean {
    const t = this.peek();
    if (t.kind === 'ident' && !t.text.startsWith('!')) return this.isPunct('=', 1);
    if (t.kind === 'punct' && t.text === '[' && this.peek(1).kind === 'string' && this.isPunct(']', 2))
      return this.isPunct('=', 3);
    return false;
  }

  // ---- statements -----------------------------------------------------------------------------------------

  query(): Query {
    const statements: Statement[] = [];
    for (;;) {
      while (this.acceptPunct(';'));
      if (this.isWord('let')) statements.push(this.letStatement());
      else if (this.isWord('set')) statements.push(this.setStatement());
      else if (this.isWord('declare')) statements.push(this.declareStatement());
      else break;
      if (this.peek().kind !== 'eof') this.expectPunct(';');
    }
    if (this.peek().kind === 'eof') this.fail('the query has no tabular expression (expected a dataset name)');
    const body = this.tabular();
    while (this.acceptPunct(';'));
    if (this.peek().kind !== 'eof') {
      if (this.isPunct('|')) this.fail('expected an operator after "|"');
      this.fail(`unexpected ${this.describe(this.peek())}; operators are separated by "|"`);
    }
    return { statements, body };
  }

  private letStatement(): Statement {
    const start = this.expectWord('let');
    const name = this.ident('a name after let').text;
    this.expectPunct('=');
    if (this.atTabularStart()) return { kind: 'let', pos: start.pos, name, value: this.tabular(), tabular: true };
    return { kind: 'let', pos: start.pos, name, value: this.expression(), tabular: false };
  }

  /** A let value is tabular when it starts with a table source followed by a pipe, or with datatable/print. */
  private atTabularStart(): boolean {
    if (this.isWord('datatable') || this.isWord('print')) return true;
    if (!this.isNameStart()) return false;
    const len = this.isPunct('[') ? 3 : 1;
    return this.isPunct('|', len);
  }

  private setStatement(): Statement {
    const start = this.expectWord('set');
    const name = this.ident('an option name after set').text;
    const value = this.acceptPunct('=') ? this.expression() : undefined;
    return { kind: 'set', pos: start.pos, name, value };
  }

  private declareStatement(): Statement {
    const start = this.expectWord('declare');
    this.expectWord('query_parameters');
    this.expectPunct('(');
    const params: { name: string; type: string; default?: Expr; pos: number }[] = [];
    if (!this.isPunct(')')) {
      do {
        const n = this.ident('a parameter name');
        this.expectPunct(':');
        const type = this.typeName();
        const def = this.acceptPunct('=') ? this.expression() : undefined;
        params.push({ name: n.text, type, default: def, pos: n.pos });
      } while (this.acceptPunct(','));
    }
    this.expectPunct(')');
    return { kind: 'declare', pos: start.pos, params };
  }

  private typeName(): string {
    const t = this.ident('a type name');
    if (!(t.text in TYPE_NAMES))
      this.fail(`unknown type "${t.text}" (expected one of ${Object.keys(TYPE_NAMES).join(', ')})`, t);
    return t.text;
  }

  // ---- tabular expressions -------------------------------------------------------------------------------

  pipeline(): Query {
    const statements: Statement[] = [];
    for (;;) {
      while (this.acceptPunct(';'));
      if (this.isWord('let')) statements.push(this.letStatement());
      else break;
      if (this.peek().kind !== 'eof') this.expectPunct(';');
    }
    const pos = this.peek().pos;
    if (this.peek().kind === 'eof') this.fail('expected an operator such as where or extend');
    this.acceptPunct('|');
    const ops: Operator[] = [this.operator()];
    while (this.acceptPunct('|')) ops.push(this.operator());
    while (this.acceptPunct(';'));
    if (this.peek().kind !== 'eof')
      this.fail(`unexpected ${this.describe(this.peek())}; operators are separated by "|"`);
    return { statements, body: { pos, source: { kind: 'table', pos, name: '' }, ops } };
  }

  private tabular(): TabularExpr {
    if (++this.nesting > this.maxDepth) this.fail(`the query is nested too deeply (${this.depthLimit})`);
    try {
      return this.tabularBody();
    } finally {
      this.nesting--;
    }
  }

  private tabularBody(): TabularExpr {
    const pos = this.peek().pos;
    const source = this.source();
    const ops: Operator[] = [];
    while (this.acceptPunct('|')) ops.push(this.operator());
    return { pos, source, ops };
  }

  private source(): Source {
    const t = this.peek();
    if (this.isWord('print')) {
      this.next();
      return { kind: 'print', pos: t.pos, items: this.assignments() };
    }
    if (this.isWord('datatable') && this.isPunct('(', 1)) return this.datatable();
    if (this.isWord('table') && this.isPunct('(', 1)) {
      this.i += 2;
      const expr = this.expression();
      this.expectPunct(')');
      return { kind: 'table-expr', pos: t.pos, expr };
    }
    if (this.isWord('union') && !this.isPunct('|', 1) && this.peek(1).kind !== 'eof') {
      this.next();
      const withSource = this.withSource();
      return { kind: 'union', pos: t.pos, withSource, tables: this.tableRefs() };
    }
    if (this.isWord('search') && !this.isPunct('|', 1) && this.peek(1).kind !== 'eof') {
      this.next();
      const caseSensitive = this.searchKind();
      let tables: TableRef[] | undefined;
      if (this.isWord('in') && this.isPunct('(', 1)) {
        this.next();
        this.expectPunct('(');
        tables = this.tableRefs();
        this.expectPunct(')');
      }
      return { kind: 'search', pos: t.pos, caseSensitive, tables, predicate: this.searchPredicate() };
    }
    if (this.isWord('externaldata') && this.isPunct('(', 1)) {
      // Parsed whole, so the refusal (the binder's) is about the operator, not its syntax.
      this.next();
      this.balanced();
      this.balanced();
      if (this.acceptWord('with')) this.balanced();
      return { kind: 'unsupported', pos: t.pos, name: 'externaldata' };
    }
    if (
      t.kind === 'ident' &&
      KNOWN_UNSUPPORTED_OPERATORS.has(t.text) &&
      !this.isPunct('|', 1) &&
      this.peek(1).kind !== 'eof'
    ) {
      this.fail(`"${t.text}" as a query source is not supported`);
    }
    const n = this.nameToken('a dataset name');
    return { kind: 'table', pos: n.pos, name: n.name };
  }

  private datatable(): Source {
    const start = this.expectWord('datatable');
    this.expectPunct('(');
    const columns: { name: string; type: string; pos: number }[] = [];
    do {
      const n = this.nameToken('a column name');
      this.expectPunct(':');
      columns.push({ name: n.name, type: this.typeName(), pos: n.pos });
    } while (this.acceptPunct(','));
    this.expectPunct(')');
    this.expectPunct('[');
    const values: Expr[] = [];
    if (!this.isPunct(']')) {
      do {
        if (this.isPunct(']')) break; // trailing comma
        values.push(this.expression());
      } while (this.acceptPunct(','));
    }
    this.expectPunct(']');
    if (values.length % columns.length !== 0) {
      this.fail(`datatable has ${values.length} values, not a multiple of its ${columns.length} columns`, start);
    }
    return { kind: 'datatable', pos: start.pos, columns, values };
  }

  private operator(): Operator {
    const t = this.peek();
    if (t.kind !== 'ident') this.fail(`expected a tabular operator after "|" but found ${this.describe(t)}`);
    const pos = t.pos;
    this.next();
    switch (t.text) {
      case 'where':
      case 'filter':
        return { op: 'where', pos, predicate: this.expression() };
      case 'extend':
        return { op: 'extend', pos, items: this.assignments() };
      case 'extend-valid':
        return { op: 'extend', pos, items: this.assignments(), valid: true };
      case 'project':
        return { op: 'project', pos, items: this.commaList(() => this.projectItem()) };
      case 'parse-kv':
        return this.parseKv(pos);
      case 'redact':
        return this.redact(pos);
      case 'project-away':
      case 'project-keep':
        return { op: t.text, pos, patterns: this.patterns() };
      case 'project-rename': {
        const items: { pos: number; name: string; from: string }[] = [];
        do {
          const n = this.nameToken('a new column name');
          this.expectPunct('=');
          const from = this.nameToken('the column to rename');
          items.push({ pos: n.pos, name: n.name, from: from.name });
        } while (this.acceptPunct(','));
        return { op: 'project-rename', pos, items };
      }
      case 'project-reorder': {
        const items: { pattern: NamePattern; order?: 'asc' | 'desc' | 'granny-asc' | 'granny-desc' }[] = [];
        do {
          const pattern = this.pattern();
          const o = this.peek();
          let order: 'asc' | 'desc' | 'granny-asc' | 'granny-desc' | undefined;
          if (o.kind === 'ident' && ['asc', 'desc', 'granny-asc', 'granny-desc'].includes(o.text)) {
            order = o.text as typeof order;
            this.next();
          }
          items.push({ pattern, order });
        } while (this.acceptPunct(','));
        return { op: 'project-reorder', pos, items };
      }
      case 'summarize': {
        const aggs = this.isWord('by') ? [] : this.assignments();
        const by = this.acceptWord('by') ? this.assignments() : [];
        if (aggs.length === 0 && by.length === 0) this.fail('summarize needs an aggregation or a "by" clause', t);
        return { op: 'summarize', pos, aggs, by };
      }
      case 'sort':
      case 'order': {
        this.expectWord('by');
        return { op: 'sort', pos, keys: this.commaList(() => this.sortKey()) };
      }
      case 'take':
      case 'limit':
        return { op: 'take', pos, count: this.expression() };
      case 'top': {
        const count = this.expression();
        this.expectWord('by');
        return { op: 'top', pos, count, key: this.sortKey() };
      }
      case 'count':
        return { op: 'count', pos };
      case 'distinct': {
        if (this.acceptPunct('*')) return { op: 'distinct', pos, items: 'all' };
        return { op: 'distinct', pos, items: this.commaList(() => this.expression()) };
      }
      case 'getschema':
        return { op: 'getschema', pos };
      case 'union': {
        const withSource = this.withSource();
        return { op: 'union', pos, withSource, tables: this.tableRefs() };
      }
      case 'search':
        return { op: 'search', pos, caseSensitive: this.searchKind(), predicate: this.searchPredicate() };
      case 'join':
      case 'lookup': {
        let kind: string | undefined;
        if (this.isWord('kind') && this.isPunct('=', 1)) {
          this.i += 2;
          kind = this.ident('a join kind').text;
        }
        const right = this.tableRef();
        this.expectWord('on');
        return { op: t.text, pos, kind, right, on: this.commaList(() => this.joinCondition()) };
      }
      case 'mv-expand':
        return this.mvExpand(pos);
      case 'parse':
      case 'parse-where':
        return this.parseOperator(t.text, pos);
      case 'sample':
        return { op: 'sample', pos, proportion: this.expression() };
      case 'make-series':
        return this.makeSeries(pos);
      default:
        if (KNOWN_UNSUPPORTED_OPERATORS.has(t.text)) {
          // Consume the rest of this operator (subqueries in parentheses included) so that the error is about
          // the operator, not its arguments.
          for (let depth = 0; this.peek().kind !== 'eof' && (depth > 0 || !this.isPunct('|'));) {
            const t2 = this.next();
            if (t2.kind === 'punct' && (t2.text === '(' || t2.text === '[' || t2.text === '{')) depth++;
            if (t2.kind === 'punct' && (t2.text === ')' || t2.text === ']' || t2.text === '}'))
              depth = Math.max(0, depth - 1);
          }
          return { op: 'unsupported', pos, name: t.text };
        }
        return this.fail(`unknown tabular operator "${t.text}"`, t);
    }
  }

  /** `withsource=F` of union. */
  private withSource(): string | undefined {
    if ((this.isWord('withsource') || this.isWord('kind')) && this.isPunct('=', 1)) {
      const w = this.next().text;
      this.next();
      const v = this.nameToken('a column name').name;
      if (w === 'withsource') return v;
      return this.withSource();
    }
    return undefined;
  }

  /** `kind=case_sensitive|case_insensitive|default` of search; true when case-sensitive. */
  private searchKind(): boolean {
    if (this.isWord('kind') && this.isPunct('=', 1)) {
      this.i += 2;
      const k = this.ident('a search kind');
      if (!['case_sensitive', 'case_insensitive', 'default'].includes(k.text))
        this.fail(`unknown search kind "${k.text}" (case_sensitive, case_insensitive or default)`, k);
      return k.text === 'case_sensitive';
    }
    return false;
  }

  /** `item (, item)*`. */
  private commaList<T>(item: () => T): T[] {
    const out: T[] = [];
    do out.push(item());
    while (this.acceptPunct(','));
    return out;
  }

  private tableRefs(): TableRef[] {
    return this.commaList(() => this.tableRef());
  }

  /** `(tabular expression)`, a table name, or a name pattern such as github* or *. */
  private tableRef(): TableRef {
    const t = this.peek();
    if (this.isPunct('(') && !(this.peek(1).kind === 'string' && this.isPunct(')', 2))) {
      this.next();
      const expr = this.tabular();
      this.expectPunct(')');
      return { kind: 'tabular', pos: t.pos, expr };
    }
    const p = this.pattern();
    return { kind: 'pattern', pos: p.pos, pattern: p.pattern };
  }

  /** `key`, or `$left.a == $right.b` (either side first). */
  private joinCondition(): { pos: number; left: string; right: string } {
    const t = this.peek();
    const side = (): { side: string; name: string } | undefined => {
      const s0 = this.peek();
      if (s0.kind === 'ident' && (s0.text === '$left' || s0.text === '$right') && this.isPunct('.', 1)) {
        this.i += 2;
        return { side: s0.text, name: this.nameToken('a column name').name };
      }
      return undefined;
    };
    const a = side();
    if (!a) {
      const n = this.nameToken('a join key');
      return { pos: t.pos, left: n.name, right: n.name };
    }
    this.expectPunct('==');
    const b = side();
    if (!b || b.side === a.side) this.fail('a join condition compares $left.column with $right.column', t);
    return a.side === '$left'
      ? { pos: t.pos, left: a.name, right: b!.name }
      : { pos: t.pos, left: b!.name, right: a.name };
  }

  /** mv-expand [kind=bag|array] [with_itemindex=I] [name =] expr [to typeof(T)], ... [limit N] */
  private mvExpand(pos: number): Operator {
    let bagKind: 'bag' | 'array' = 'bag';
    let itemIndex: string | undefined;
    for (;;) {
      if (this.isWord('kind') && this.isPunct('=', 1)) {
        this.i += 2;
        const k = this.ident('bag or array');
        if (k.text !== 'bag' && k.text !== 'array') this.fail('mv-expand kind is bag or array', k);
        bagKind = k.text as 'bag' | 'array';
      } else if (this.isWord('with_itemindex') && this.isPunct('=', 1)) {
        this.i += 2;
        itemIndex = this.nameToken('a column name').name;
      } else break;
    }
    const items = this.commaList(() => {
      const a = this.assignment();
      let toType: string | undefined;
      if (this.acceptWord('to')) {
        this.expectWord('typeof');
        this.expectPunct('(');
        toType = this.typeName();
        this.expectPunct(')');
      }
      return { ...a, toType };
    });
    let limit: number | undefined;
    if (this.acceptWord('limit')) {
      const n = this.next();
      if (n.kind !== 'int') this.fail('mv-expand limit takes a whole number', n);
      limit = Number(n.value as bigint);
    }
    return { op: 'mv-expand', pos, bagKind, itemIndex, items, limit };
  }

  /** make-series [name =] agg [default = v], ... on axis [from a] [to b] | [in range(a, b, step)] step s [by k, ...] */
  private makeSeries(pos: number): Operator {
    const aggs = this.commaList(() => {
      const a = this.assignment();
      let def: Expr | undefined;
      if (this.isWord('default') && this.isPunct('=', 1)) {
        this.i += 2;
        def = this.expression();
      }
      return { ...a, default: def };
    });
    this.expectWord('on');
    const axis = this.additive();
    let from: Expr | undefined;
    let to: Expr | undefined;
    let step: Expr | undefined;
    if (this.isWord('in') && this.isWord('range', 1)) {
      this.i += 2;
      this.expectPunct('(');
      from = this.expression();
      this.expectPunct(',');
      to = this.expression();
      this.expectPunct(',');
      step = this.expression();
      this.expectPunct(')');
    } else {
      if (this.acceptWord('from')) from = this.additive();
      if (this.acceptWord('to')) to = this.additive();
      this.expectWord('step');
      step = this.additive();
    }
    const by = this.acceptWord('by') ? this.assignments() : [];
    return { op: 'make-series', pos, aggs, axis, from, to, step, by };
  }

  /** parse [kind=simple|regex|relaxed] expr with [*] "const" name[:type] [*] ... */
  private parseOperator(op: 'parse' | 'parse-where', pos: number): Operator {
    let kind: 'simple' | 'regex' | 'relaxed' = 'simple';
    if (this.isWord('kind') && this.isPunct('=', 1)) {
      this.i += 2;
      const k = this.ident('simple, regex or relaxed');
      if (!['simple', 'regex', 'relaxed'].includes(k.text)) this.fail('parse kind is simple, regex or relaxed', k);
      kind = k.text as typeof kind;
    }
    const expr = this.additive();
    this.expectWord('with');
    const parts: ParsePart[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === 'string') {
        let text = '';
        while (this.peek().kind === 'string') text += this.next().value as string;
        parts.push({ kind: 'const', text });
      } else if (this.isPunct('*')) {
        this.next();
        parts.push({ kind: 'star' });
      } else if (this.isNameStart() && !this.isPunct('|')) {
        const n = this.nameToken('a column name');
        let type: string | undefined;
        if (this.acceptPunct(':')) type = this.typeName();
        parts.push({ kind: 'name', name: n.name, type, pos: n.pos });
      } else if (this.isPunct(',')) {
        this.next(); // the docs' parse-where example separates parts with commas
      } else break;
    }
    if (!parts.some((p) => p.kind === 'name')) this.fail(`${op} needs at least one column to capture`, pos);
    return { op, pos, kind, expr, parts };
  }

  /** `parse-kv expr as (k1, k2:type) with (pair_delimiter=';', kv_delimiter='=' [, quote='"'])`. */
  private parseKv(pos: number): Operator {
    const expr = this.additive();
    this.expectWord('as');
    this.expectPunct('(');
    const keys = this.commaList(() => {
      const n = this.nameToken('a key');
      return { pos: n.pos, name: n.name, type: this.acceptPunct(':') ? this.typeName() : undefined };
    });
    this.expectPunct(')');
    const options: Record<string, string> = {};
    if (this.acceptWord('with')) {
      this.expectPunct('(');
      do {
        const k = this.ident('an option');
        this.expectPunct('=');
        const v = this.next();
        if (v.kind !== 'string' && !(v.kind === 'ident' && (v.text === 'true' || v.text === 'false'))) {
          this.fail(`parse-kv's ${k.text} takes a string`, v);
        }
        if (!['pair_delimiter', 'kv_delimiter', 'quote', 'escape', 'greedy'].includes(k.text)) {
          this.fail(`parse-kv takes pair_delimiter, kv_delimiter and quote, not "${k.text}"`, k);
        }
        options[k.text] = v.kind === 'string' ? (v.value as string) : v.text;
      } while (this.acceptPunct(','));
      this.expectPunct(')');
    }
    const pairDelimiter = options.pair_delimiter ?? ' ';
    const kvDelimiter = options.kv_delimiter ?? '=';
    if (pairDelimiter === '' || kvDelimiter === '') this.fail('parse-kv delimiters may not be empty', pos);
    return { op: 'parse-kv', pos, expr, keys, pairDelimiter, kvDelimiter, quote: options.quote };
  }

  /** `redact [replaceToken="*"] [replaceHash=bool] [redactGroups=bool] [name=]regex, ... [on field, ...]`. */
  private redact(pos: number): Operator {
    let replaceToken = '*';
    let replaceHash = false;
    let redactGroups = false;
    for (;;) {
      if (this.isWord('replaceToken') && this.isPunct('=', 1)) {
        this.i += 2;
        const v = this.next();
        if (v.kind !== 'string') this.fail('replaceToken takes a string', v);
        replaceToken = v.value as string;
      } else if ((this.isWord('replaceHash') || this.isWord('redactGroups')) && this.isPunct('=', 1)) {
        const k = this.next().text;
        this.next();
        const v = this.ident('true or false');
        if (v.text !== 'true' && v.text !== 'false') this.fail(`${k} takes true or false`, v);
        if (k === 'replaceHash') replaceHash = v.text === 'true';
        else redactGroups = v.text === 'true';
      } else if (this.isWord('auditField') && this.isPunct('=', 1)) {
        this.fail('redact auditField is not supported by this service', this.peek());
      } else break;
    }
    const patterns = this.commaList(() => {
      const p = this.peek();
      let name: string | undefined;
      if (this.atAssignment()) {
        name = this.nameToken('a pattern name').name;
        this.expectPunct('=');
      }
      const r = this.next();
      if (r.kind !== 'string') this.fail('redact takes regular expressions as strings', r);
      return { pos: p.pos, name, regex: r.value as string };
    });
    const fields = this.acceptWord('on') ? this.patterns() : undefined;
    return { op: 'redact', pos, patterns, fields, replaceToken, replaceHash, redactGroups };
  }

  /** A project item: `name = expr`, an expression, or a wildcard pattern such as `['geo.']*` or `resp_*`. */
  private projectItem(): ProjectItem {
    if (this.isNameStart()) {
      const start = this.i;
      this.nameToken('a column name');
      const star = this.isPunct('*') && this.peek().pos === this.peek(-1).end;
      const after = this.peek(star ? 1 : 0);
      this.i = start;
      const ends = after.kind === 'eof' || (after.kind === 'punct' && (after.text === ',' || after.text === '|'));
      if (star && ends) return { pos: this.peek().pos, pattern: this.pattern() };
    }
    return this.assignment();
  }

  /** search's predicate; `search *` matches every row. */
  private searchPredicate(): Expr {
    const t = this.peek();
    if (this.isPunct('*') && (this.isPunct('|', 1) || this.peek(1).kind === 'eof')) {
      this.next();
      return { kind: 'literal', pos: t.pos, type: 'bool', value: true };
    }
    return this.expression();
  }

  /** Skips one parenthesised, bracketed or braced group, whatever it holds. */
  private balanced(): void {
    const open = this.next();
    const close = { '(': ')', '[': ']', '{': '}' }[open.text];
    if (open.kind !== 'punct' || !close) this.fail(`expected "(" or "[" but found ${this.describe(open)}`, open);
    for (let depth = 1; depth > 0;) {
      const t = this.next();
      if (t.kind === 'eof') this.fail(`"${open.text}" is not closed`, open);
      if (t.kind === 'punct' && (t.text === '(' || t.text === '[' || t.text === '{')) depth++;
      if (t.kind === 'punct' && (t.text === ')' || t.text === ']' || t.text === '}')) depth--;
    }
  }

  private sortKey(): SortKey {
    const expr = this.expression();
    let desc = true; // APL's default sort direction is descending
    if (this.acceptWord('asc')) desc = false;
    else this.acceptWord('desc');
    let nulls: 'first' | 'last' | undefined;
    if (this.acceptWord('nulls')) {
      if (this.acceptWord('first')) nulls = 'first';
      else if (this.acceptWord('last')) nulls = 'last';
      else this.fail('expected "first" or "last" after "nulls"');
    }
    return { expr, desc, nulls };
  }

  private patterns(): NamePattern[] {
    return this.commaList(() => this.pattern());
  }

  /** `name`, `['name']`, `prefix*`, `['geo.']*`, `*`. */
  private pattern(): NamePattern {
    const t = this.peek();
    if (this.acceptPunct('*')) {
      let rest = '*';
      if (this.peek().kind === 'ident' && this.peek().pos === t.end) rest += this.next().text;
      return { pos: t.pos, pattern: rest, wildcard: true };
    }
    const n = this.nameToken('a column name');
    let pattern = n.name;
    let wildcard = false;
    while (this.isPunct('*') && this.peek().pos === this.peek(-1).end) {
      this.next();
      pattern += '*';
      wildcard = true;
      if (this.peek().kind === 'ident' && this.peek().pos === this.peek(-1).end) pattern += this.next().text;
    }
    return { pos: n.pos, pattern, wildcard };
  }

  /** `[name =] expression`. */
  private assignment(): Assignment {
    const pos = this.peek().pos;
    if (!this.atAssignment()) return { pos, expr: this.expression() };
    const n = this.nameToken('a column name');
    this.expectPunct('=');
    return { pos, name: n.name, expr: this.expression() };
  }

  private assignments(): Assignment[] {
    return this.commaList(() => this.assignment());
  }

  // ---- expressions ----------------------------------------------------------------------------------------

  /**
   * An expression. Nesting is bounded (MAX_DEPTH) so that no query can exhaust the stack of this parser
   * or of the binder and compiler, which walk the tree recursively.
   */
  expression(): Expr {
    if (++this.nesting > this.maxDepth) this.fail(`the expression is nested too deeply (${this.depthLimit})`);
    this.expressionNesting++;
    try {
      const e = this.or();
      // The outermost expression checks the whole tree once (operator chains nest without recursion here).
      if (this.expressionNesting === 1)
        checkDepth(e, this.maxDepth, (pos) =>
          this.fail(`the expression is nested too deeply (${this.depthLimit})`, pos),
        );
      return e;
    } finally {
      this.nesting--;
      this.expressionNesting--;
    }
  }

  /** A left-associative chain of `operand (op operand)*`; `isOp` recognises the operator tokens. */
  private chain(operand: () => Expr, isOp: (t: Token) => boolean): Expr {
    let left = operand();
    while (isOp(this.peek())) {
      const t = this.next();
      left = { kind: 'binary', pos: t.pos, op: t.text, left, right: operand() };
    }
    return left;
  }

  private or(): Expr {
    return this.chain(
      () => this.and(),
      (t) => t.kind === 'ident' && t.text === 'or',
    );
  }

  private and(): Expr {
    return this.chain(
      () => this.comparison(),
      (t) => t.kind === 'ident' && t.text === 'and',
    );
  }

  private comparison(): Expr {
    let left = this.additive();
    for (;;) {
      const t = this.peek();
      if (t.kind === 'punct' && COMPARISONS.has(t.text)) {
        this.next();
        left = { kind: 'binary', pos: t.pos, op: t.text === '<>' ? '!=' : t.text, left, right: this.additive() };
      } else if (t.kind === 'ident' && STRING_OPERATORS.has(t.text)) {
        this.next();
        left = { kind: 'binary', pos: t.pos, op: t.text, left, right: this.additive() };
      } else if (t.kind === 'punct' && t.text === ':' && left.kind === 'name') {
        // search's field:"term" means field has "term"
        this.next();
        left = { kind: 'binary', pos: t.pos, op: 'has', left, right: this.additive() };
      } else if (t.kind === 'ident' && (t.text === 'matches' || t.text === '!matches')) {
        this.next();
        this.expectWord('regex');
        left = { kind: 'binary', pos: t.pos, op: `${t.text} regex`, left, right: this.additive() };
      } else if (t.kind === 'ident' && LIST_OPERATORS.has(t.text)) {
        this.next();
        this.expectPunct('(');
        const items: Expr[] = [];
        if (!this.isPunct(')')) {
          do items.push(this.expression());
          while (this.acceptPunct(','));
        }
        this.expectPunct(')');
        left = { kind: 'list', pos: t.pos, op: t.text, left, items };
      } else if (t.kind === 'ident' && (t.text === 'between' || t.text === '!between')) {
        this.next();
        this.expectPunct('(');
        const low = this.additive();
        this.expectPunct('..');
        const high = this.additive();
        this.expectPunct(')');
        left = { kind: 'between', pos: t.pos, negated: t.text === '!between', left, low, high };
      } else return left;
    }
  }

  private additive(): Expr {
    return this.chain(
      () => this.multiplicative(),
      (t) => t.kind === 'punct' && (t.text === '+' || t.text === '-'),
    );
  }

  private multiplicative(): Expr {
    return this.chain(
      () => this.unary(),
      (t) => t.kind === 'punct' && (t.text === '*' || t.text === '/' || t.text === '%'),
    );
  }

  private unary(): Expr {
    if (this.isPunct('-') || this.isPunct('+')) {
      const t = this.next();
      if (++this.nesting > this.maxDepth) this.fail(`the expression is nested too deeply (${this.depthLimit})`, t);
      let operand: Expr;
      try {
        operand = this.unary();
      } finally {
        this.nesting--;
      }
      if (t.text === '-' && operand.kind === 'literal' && operand.value !== null) {
        if (typeof operand.value === 'bigint') return { ...operand, pos: t.pos, value: -operand.value };
        if (typeof operand.value === 'number' && operand.type === 'real')
          return { ...operand, pos: t.pos, value: -operand.value };
      }
      return { kind: 'unary', pos: t.pos, op: t.text as '-' | '+', operand };
    }
    return this.postfix();
  }

  private postfix(): Expr {
    let e = this.primary();
    for (;;) {
      if (
        this.isPunct('.') &&
        this.peek(1).kind === 'ident' &&
        (e.kind === 'name' || e.kind === 'member' || e.kind === 'index' || e.kind === 'call')
      ) {
        const dot = this.next();
        const n = this.next();
        e = { kind: 'member', pos: dot.pos, target: e, name: n.text };
      } else if (
        this.isPunct('[') &&
        (e.kind === 'name' ||
          e.kind === 'member' ||
          e.kind === 'index' ||
          e.kind === 'call' ||
          (e.kind === 'literal' && e.type === 'dynamic'))
      ) {
        const b = this.next();
        const index = this.expression();
        this.expectPunct(']');
        e = { kind: 'index', pos: b.pos, target: e, index };
      } else return e;
    }
  }

  private primary(): Expr {
    const t = this.peek();
    switch (t.kind) {
      case 'string': {
        this.next();
        let value = t.value as string;
        // Adjacent string literals concatenate.
        while (this.peek().kind === 'string') value += this.next().value as string;
        return { kind: 'literal', pos: t.pos, type: 'string', value };
      }
      case 'int':
        this.next();
        return { kind: 'literal', pos: t.pos, type: 'long', value: t.value as bigint };
      case 'real':
        this.next();
        return { kind: 'literal', pos: t.pos, type: 'real', value: t.value as number };
      case 'timespan':
        this.next();
        return { kind: 'literal', pos: t.pos, type: 'timespan', value: t.value as bigint };
      case 'punct':
        if (t.text === '(') {
          this.next();
          const e = this.expression();
          this.expectPunct(')');
          return e;
        }
        if (t.text === '[' && this.peek(1).kind === 'string' && this.isPunct(']', 2)) {
          const n = this.nameToken('a name');
          return { kind: 'name', pos: n.pos, name: n.name, quoted: true };
        }
        if (t.text === '*') {
          this.next();
          return { kind: 'star', pos: t.pos };
        }
        return this.fail(`expected an expression but found ${this.describe(t)}`);
      case 'ident':
        return this.identExpression();
      default:
        return this.fail(`expected an expression but found ${this.describe(t)}`);
    }
  }

  private identExpression(): Expr {
    const t = this.next();
    if (t.text.startsWith('!')) this.fail(`unexpected operator "${t.text}"`, t);
    if (t.text === 'true' || t.text === 'false')
      return { kind: 'literal', pos: t.pos, type: 'bool', value: t.text === 'true' };
    if (!this.isPunct('(')) return { kind: 'name', pos: t.pos, name: t.text, quoted: false };
    if (t.text === 'datetime') return this.datetimeLiteral(t);
    if (t.text === 'dynamic') return this.dynamicLiteral(t);
    if (t.text === 'typeof') {
      this.expectPunct('(');
      const type = this.typeName();
      this.expectPunct(')');
      return { kind: 'typeof', pos: t.pos, typeName: type };
    }
    if (TYPE_NAMES[t.text] && t.text !== 'string' && t.text !== 'date') return this.typedLiteral(t);
    this.expectPunct('(');
    const args: Expr[] = [];
    if (!this.isPunct(')')) {
      do args.push(this.callArgument());
      while (this.acceptPunct(','));
    }
    this.expectPunct(')');
    return { kind: 'call', pos: t.pos, name: t.text, args };
  }

  /** A call's argument: an expression, or `name = expression` (arg_max's named outputs). */
  private callArgument(): Expr {
    if (!this.atAssignment()) return this.expression();
    const n = this.nameToken('an argument name');
    this.expectPunct('=');
    return { kind: 'named', pos: n.pos, name: n.name, value: this.expression() };
  }

  /** long(5), real(null), real(nan), bool(true), timespan(15s), time(1h). */
  private typedLiteral(t: Token): Expr {
    const type = TYPE_NAMES[t.text]!;
    this.expectPunct('(');
    const v = this.peek();
    let value: bigint | number | boolean | null;
    if (this.isWord('null')) {
      this.next();
      value = null;
    } else if (type === 'real' && (this.isWord('nan') || this.isWord('inf'))) {
      // real(nan), real(inf), real(+inf), real(-inf): the values no number literal can write.
      value = this.next().text === 'nan' ? NaN : Infinity;
    } else if (type === 'real' && (this.isPunct('+') || this.isPunct('-')) && this.isWord('inf', 1)) {
      value = this.next().text === '-' ? -Infinity : Infinity;
      this.next();
    } else {
      const e = this.unary();
      if (e.kind !== 'literal') this.fail(`${t.text}(...) takes a literal value or null`, v);
      value = convertLiteral(e.value, e.type, type) as bigint | number | boolean | null;
      if (value === undefined) this.fail(`${t.text}(...) cannot hold ${String(e.value)}`, v);
    }
    this.expectPunct(')');
    return { kind: 'literal', pos: t.pos, type, value };
  }

  private datetimeLiteral(t: Token): Expr {
    this.expectPunct('(');
    const raw = this.next();
    this.expectPunct(')');
    let text = raw.value as string;
    if (text === 'null') return { kind: 'literal', pos: t.pos, type: 'datetime', value: null };
    if (/^(['"]).*\1$/.test(text)) text = text.slice(1, -1);
    const ns = parseDatetimeText(text);
    if (ns === null)
      this.fail(`invalid datetime "${text}" (expected e.g. 2024-01-15T14:00:00Z or 2024-01-15 14:00)`, raw);
    return { kind: 'literal', pos: t.pos, type: 'datetime', value: ns };
  }

  private dynamicLiteral(t: Token): Expr {
    this.expectPunct('(');
    const value = this.dynamicValue();
    this.expectPunct(')');
    return { kind: 'literal', pos: t.pos, type: 'dynamic', value };
  }

  /** JSON, leniently: single-quoted strings, bare keys, timespans and datetimes inside. */
  private dynamicValue(): DynamicValue {
    if (++this.nesting > this.maxDepth) this.fail(`the dynamic literal is nested too deeply (${this.depthLimit})`);
    try {
      return this.dynamicValueBody();
    } finally {
      this.nesting--;
    }
  }

  private dynamicValueBody(): DynamicValue {
    const t = this.peek();
    if (this.acceptPunct('[')) {
      const items: DynamicValue[] = [];
      if (!this.isPunct(']')) {
        do {
          if (this.isPunct(']')) break;
          items.push(this.dynamicValue());
        } while (this.acceptPunct(','));
      }
      this.expectPunct(']');
      return items;
    }
    if (this.acceptPunct('{')) {
      const obj: { [k: string]: DynamicValue } = {};
      if (!this.isPunct('}')) {
        do {
          if (this.isPunct('}')) break;
          const k = this.next();
          if (k.kind !== 'string' && k.kind !== 'ident') this.fail('expected a property name in dynamic({...})', k);
          this.expectPunct(':');
          obj[k.kind === 'string' ? (k.value as string) : k.text] = this.dynamicValue();
        } while (this.acceptPunct(','));
      }
      this.expectPunct('}');
      return obj;
    }
    if (this.isWord('null')) {
      this.next();
      return null;
    }
    const e = this.unary();
    if (e.kind !== 'literal') this.fail('dynamic(...) holds only literal values', t);
    const v = e.value;
    if (typeof v === 'bigint') return e.type === 'datetime' ? formatDynamicTime(v) : Number(v);
    return v as DynamicValue;
  }
}

/** The hard cap on nesting: far beyond any real query, far below the stack's limit. */
export const MAX_DEPTH = 256;

/** Fails (with the position of the deepest node) when an expression tree is deeper than maxDepth. Iterative. */
function checkDepth(root: Expr, maxDepth: number, fail: (pos: number) => never): void {
  const stack: [Expr, number][] = [[root, 1]];
  while (stack.length) {
    const [e, d] = stack.pop()!;
    if (d > maxDepth) fail(e.pos);
    const push = (c: Expr) => stack.push([c, d + 1]);
    switch (e.kind) {
      case 'member':
        push(e.target);
        break;
      case 'index':
        push(e.target);
        push(e.index);
        break;
      case 'call':
        e.args.forEach(push);
        break;
      case 'unary':
        push(e.operand);
        break;
      case 'binary':
        push(e.left);
        push(e.right);
        break;
      case 'list':
        push(e.left);
        e.items.forEach(push);
        break;
      case 'between':
        push(e.left);
        push(e.low);
        push(e.high);
        break;
      case 'named':
        push(e.value);
        break;
      default:
        break;
    }
  }
}

function formatDynamicTime(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString();
}

/** Parses the inside of datetime(...): ISO 8601 with `T` or a space, optional seconds, fraction and zone (UTC by default). */
export function parseDatetimeText(text: string): bigint | null {
  const t = text.trim();
  const withZone = /(Z|z|[+-]\d{2}:?\d{2})$/.test(t) || /^\d{4}-\d{2}-\d{2}$/.test(t) ? t : `${t}Z`;
  return parseRfc3339Ns(withZone);
}

/** Converts a literal to another literal type for typed literals such as real(1) or long(2.0). */
function convertLiteral(value: unknown, from: LiteralType, to: LiteralType): unknown {
  if (from === to) return value;
  if (to === 'real' && from === 'long') return Number(value as bigint);
  if (to === 'long' && from === 'real' && Number.isInteger(value)) return BigInt(value as number);
  if (to === 'dynamic') return typeof value === 'bigint' ? Number(value) : value;
  if (to === 'timespan' && from === 'long') return value;
  return undefined;
}
