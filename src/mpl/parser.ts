/**
 * MPL text → syntax tree (ast.ts), by recursive descent over the grammar of reference metrics.md §3.2:
 * directives and parameter declarations, then a query: a source with its time range and alias, `sample`,
 * filters (before any transformation, as MPL requires), transformations (`map`, `align`, `group`, `bucket`,
 * `as`, `offset`) and `extend`; or two queries combined by `compute`. Pure; errors name line and column.
 */
import type {
  ComputeQuery,
  Directive,
  Filter,
  FilterStage,
  Func,
  ParamDecl,
  Query,
  QueryFile,
  SimpleQuery,
  Source,
  TimePoint,
  Transform,
  Value,
} from './ast.js';
import { MplError } from './errors.js';
import { lex, type Token } from './lexer.js';

const PARAM_TYPES = ['Dataset', 'Duration', 'duration', 'Regex', 'string', 'int', 'float', 'bool', 'array', 'null'];
const IS_TYPES = ['string', 'int', 'float', 'bool', 'array', 'null'];
const COMPARE = ['==', '!=', '<', '<=', '>', '>='] as const;
/** MPL's own limit on the syntax tree's depth. */
const MAX_DEPTH = 250;

export function parseMpl(source: string): QueryFile {
  return new Parser(source).file();
}

class Parser {
  private readonly tokens: Token[];
  private at = 0;
  /** Nesting of parentheses and computes: bounded, so no text runs the parser (or the SQL) out of stack. */
  private depth = 0;

  private nest<T>(pos: number, f: () => T): T {
    if (++this.depth > MAX_DEPTH) this.fail(`recursion depth exceeded: more than ${MAX_DEPTH} nested parentheses`, pos);
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  constructor(private readonly source: string) {
    this.tokens = lex(source);
  }

  private get tok(): Token {
    const t = this.tokens[this.at]!;
    if (t.kind === 'error') throw new MplError(t.text, this.source, t.pos);
    return t;
  }

  private fail(reason: string, pos = this.tok.pos): never {
    throw new MplError(reason, this.source, pos);
  }

  private describe(t: Token): string {
    if (t.kind === 'eof') return 'the end of the query';
    if (t.kind === 'string') return `the string "${t.text}"`;
    if (t.kind === 'quoted') return `\`${t.text}\``;
    return `"${this.source.slice(t.pos, this.tokens[this.at + 1]?.pos ?? t.pos + t.text.length).trim() || t.text}"`;
  }

  /** Whether the current token is the punctuation or keyword `text` (a keyword: an unquoted identifier). */
  private is(text: string): boolean {
    const t = this.tok;
    return (t.kind === 'punct' || t.kind === 'ident') && t.text === text;
  }

  private accept(text: string): boolean {
    if (!this.is(text)) return false;
    this.at++;
    return true;
  }

  private expect(text: string, what = `"${text}"`): Token {
    if (!this.is(text)) this.fail(`expected ${what}, found ${this.describe(this.tok)}`);
    return this.tokens[this.at++]!;
  }

  /** An identifier, plain or in backticks. */
  private name(what: string): { text: string; pos: number } {
    const t = this.tok;
    if (t.kind !== 'ident' && t.kind !== 'quoted') this.fail(`expected ${what}, found ${this.describe(t)}`);
    this.at++;
    return { text: t.text, pos: t.pos };
  }

  file(): QueryFile {
    const directives: Directive[] = [];
    const params: ParamDecl[] = [];
    while (this.is('set')) directives.push(this.directive());
    while (this.is('param')) params.push(this.paramDecl());
    if (this.is('set')) this.fail('`set` directives come before the parameters and the query');
    const query = this.query();
    if (this.tok.kind !== 'eof') {
      if (this.is('|') && ['where', 'filter'].includes(this.tokens[this.at + 1]?.text ?? ''))
        this.fail('filters (`where`) must come before transformations (map, align, group, bucket)');
      this.fail(`unexpected ${this.describe(this.tok)} after the query`);
    }
    return { directives, params, query };
  }

  private directive(): Directive {
    const pos = this.expect('set').pos;
    const name = this.name('a directive name').text;
    let value: Directive['value'];
    if (this.accept('=')) {
      const t = this.tok;
      if (t.kind === 'ident' && !['true', 'false', 'null', 'inf'].includes(t.text)) {
        this.at++;
        value = { ident: t.text };
      } else value = this.value();
    }
    this.expect(';', '";" after the directive');
    return { name, value, pos };
  }

  private paramDecl(): ParamDecl {
    const pos = this.expect('param').pos;
    const t = this.tok;
    if (t.kind !== 'param') this.fail(`expected a parameter ($name), found ${this.describe(t)}`);
    this.at++;
    this.expect(':', '":" and the parameter\'s type');
    let optional = false;
    let type = this.name('a parameter type');
    if (type.text === 'Option') {
      optional = true;
      this.expect('<');
      type = this.name('a parameter type');
      this.expect('>');
    }
    if (!PARAM_TYPES.includes(type.text))
      this.fail(`unknown parameter type "${type.text}" (one of ${PARAM_TYPES.join(', ')})`, type.pos);
    this.expect(';', '";" after the parameter');
    return { name: t.text, type: type.text, optional, pos };
  }

  private query(): Query {
    return this.is('(') ? this.nest(this.tok.pos, () => this.compute()) : this.simple();
  }

  private compute(): ComputeQuery {
    const pos = this.expect('(').pos;
    const left = this.query();
    this.expect(',', '"," between the two queries of a compute');
    const right = this.query();
    this.accept(',');
    this.expect(')');
    if (this.is('[')) this.fail('a time range after a compute is not supported: give each query its own');
    this.expect('|', '"| compute" after the two queries');
    this.expect('compute', '"compute"');
    const name = this.name('the name of the computed series').text;
    this.expect('using', '"using"');
    let using: ComputeQuery['using'];
    if (['+', '-', '*', '/'].includes(this.tok.text) && this.tok.kind === 'punct')
      using = { op: this.tokens[this.at++]!.text as '+' | '-' | '*' | '/' };
    else using = this.func();
    return { kind: 'compute', left, right, name, using, transforms: this.transforms(), pos };
  }

  private simple(): SimpleQuery {
    const source = this.sourceRule();
    let sample: number | undefined;
    const filters: FilterStage[] = [];
    if (this.is('|') && this.tokens[this.at + 1]?.text === 'sample') {
      this.at += 2;
      const t = this.tok;
      if (t.kind !== 'int' && t.kind !== 'float') this.fail(`expected a sampling rate, found ${this.describe(t)}`);
      this.at++;
      sample = Number(t.text);
    }
    for (;;) {
      const next = this.tokens[this.at + 1]?.text;
      if (!this.is('|') || !['where', 'filter', 'ifdef'].includes(next ?? '')) break;
      this.at++;
      filters.push(this.filterStage());
    }
    const transforms = this.transforms();
    const extend: SimpleQuery['extend'] = [];
    if (this.is('|') && this.tokens[this.at + 1]?.text === 'extend') {
      this.at += 2;
      do {
        const n = this.name('a tag name');
        this.expect('=', '"=" and the value');
        extend.push({ name: n.text, value: this.value(), pos: n.pos });
      } while (this.accept(','));
    }
    return { kind: 'simple', source, sample, filters, transforms, extend, pos: source.pos };
  }

  private sourceRule(): Source {
    const pos = this.tok.pos;
    let dataset: Source['dataset'];
    if (this.tok.kind === 'param') dataset = { param: this.tokens[this.at++]!.text };
    else dataset = { name: this.name('a dataset (`dataset`:`metric`)').text };
    this.expect(':', '":" and the metric (`dataset`:`metric`)');
    const metric = this.name('a metric name').text;
    let range: Source['range'];
    if (this.accept('[')) {
      const start = this.timePoint();
      this.expect('..', '".." between the two ends of the time range');
      const end = this.is(']') ? undefined : this.timePoint();
      this.expect(']');
      range = { start, end };
    }
    let alias: string | undefined;
    if (this.accept('as')) alias = this.name('an alias').text;
    return { dataset, metric, range, alias, pos };
  }

  private timePoint(): TimePoint {
    const pos = this.tok.pos;
    let sign = '';
    if (this.is('+') || this.is('-')) sign = this.tokens[this.at++]!.text;
    const t = this.tok;
    if (t.kind === 'duration') {
      this.at++;
      const kind = sign === '+' ? 'ahead' : sign === '-' ? 'behind' : 'ago';
      return { kind, seconds: t.seconds!, pos };
    }
    if (t.kind === 'int' && !sign) {
      this.at++;
      return { kind: 'unix', seconds: Number(t.text), pos };
    }
    if (t.kind === 'time' && !sign) {
      this.at++;
      return { kind: 'rfc3339', text: t.text, pos };
    }
    return this.fail(`expected a time (a duration such as 1h, a Unix time or RFC 3339), found ${this.describe(t)}`);
  }

  private filterStage(): FilterStage {
    const pos = this.tok.pos;
    if (this.accept('ifdef')) {
      this.expect('(');
      const t = this.tok;
      if (t.kind !== 'param') this.fail(`expected a parameter ($name), found ${this.describe(t)}`);
      this.at++;
      this.expect(')');
      this.expect('{');
      const deprecated = this.whereKeyword();
      const filter = this.or();
      this.expect('}');
      let otherwise: Filter | undefined;
      if (this.accept('else')) {
        this.expect('{');
        this.whereKeyword();
        otherwise = this.or();
        this.expect('}');
      }
      return { kind: 'where', filter, ifdef: { param: t.text, otherwise }, deprecated, pos };
    }
    const deprecated = this.whereKeyword();
    return { kind: 'where', filter: this.or(), deprecated, pos };
  }

  /** Reads `where` or `filter`; whether it was the deprecated `filter`. */
  private whereKeyword(): boolean {
    if (this.accept('where')) return false;
    if (this.accept('filter')) return true;
    return this.fail(`expected "where", found ${this.describe(this.tok)}`);
  }

  private or(): Filter {
    const pos = this.tok.pos;
    const parts = [this.and()];
    while (this.accept('or')) parts.push(this.and());
    return parts.length === 1 ? parts[0]! : { kind: 'or', parts, pos };
  }

  private and(): Filter {
    const pos = this.tok.pos;
    const parts = [this.not()];
    while (this.accept('and')) parts.push(this.not());
    return parts.length === 1 ? parts[0]! : { kind: 'and', parts, pos };
  }

  private not(): Filter {
    const pos = this.tok.pos;
    if (this.accept('not')) return this.nest(pos, () => ({ kind: 'not', filter: this.not(), pos }));
    return this.clause();
  }

  private clause(): Filter {
    if (this.is('(')) {
      return this.nest(this.tok.pos, () => {
        this.at++;
        const f = this.or();
        this.expect(')');
        return f;
      });
    }
    const tag = this.name('a tag');
    const pos = tag.pos;
    if (this.accept('is')) {
      const type = this.name('a type').text;
      if (!IS_TYPES.includes(type)) this.fail(`unknown type "${type}" after is (one of ${IS_TYPES.join(', ')})`, pos);
      return { kind: 'is', tag: tag.text, type, pos };
    }
    if (this.accept('in')) return { kind: 'in', tag: tag.text, values: this.value(), pos };
    if (this.accept('contains')) return { kind: 'contains', tag: tag.text, value: this.value(), pos };
    if (this.is('=')) this.fail('"=" is not a comparison: write == (== #/…/ matches a regex)');
    const op = COMPARE.find((o) => this.is(o));
    if (!op)
      return this.fail(
        `expected a comparison (==, !=, <, <=, >, >=, is, in) after the tag, found ${this.describe(this.tok)}`,
      );
    this.at++;
    if (this.tok.kind === 'regex') {
      if (op !== '==' && op !== '!=') this.fail('a regex is compared with == or != only');
      return { kind: 'regex', tag: tag.text, negated: op === '!=', pattern: this.tokens[this.at++]!.text, pos };
    }
    return { kind: 'compare', tag: tag.text, op, value: this.value(), pos };
  }

  private value(): Value {
    const t = this.tok;
    const pos = t.pos;
    let sign = 1;
    if ((this.is('-') || this.is('+')) && ['int', 'float', 'ident'].includes(this.tokens[this.at + 1]?.kind ?? '')) {
      sign = this.tokens[this.at++]!.text === '-' ? -1 : 1;
    }
    const v = this.tok;
    switch (v.kind) {
      case 'string':
        this.at++;
        return { kind: 'string', value: v.text, pos };
      case 'int': {
        this.at++;
        const n = sign * Number(v.text);
        if (!Number.isSafeInteger(n)) this.fail(`the integer ${v.text} is too large`, pos);
        return { kind: 'int', value: n, pos };
      }
      case 'float':
        this.at++;
        return { kind: 'float', value: sign * Number(v.text), pos };
      case 'param':
        this.at++;
        return { kind: 'param', name: v.text, pos };
      case 'ident':
        if (v.text === 'true' || v.text === 'false') {
          this.at++;
          return { kind: 'bool', value: v.text === 'true', pos };
        }
        if (v.text === 'inf') {
          this.at++;
          return { kind: 'float', value: sign * Infinity, pos };
        }
        if (v.text === 'null') {
          this.at++;
          return { kind: 'null', pos };
        }
        break;
      case 'punct':
        if (v.text === '[') {
          return this.nest(pos, () => {
            this.at++;
            const items: Value[] = [];
            if (!this.accept(']')) {
              do items.push(this.value());
              while (this.accept(','));
              this.expect(']');
            }
            return { kind: 'array', items, pos };
          });
        }
        break;
      default:
        break;
    }
    return this.fail(`expected a value (a string, number, bool, array or $parameter), found ${this.describe(v)}`);
  }

  private func(): Func {
    const first = this.name('a function');
    let name = first.text;
    while (this.accept('::')) name += `::${this.name('a function').text}`;
    let arg: number | undefined;
    const signed = ['-', '+'].includes(this.tokens[this.at + 1]?.text ?? '') ? 1 : 0;
    if (
      this.is('(') &&
      ['int', 'float'].includes(this.tokens[this.at + 1 + signed]?.kind ?? '') &&
      this.tokens[this.at + 2 + signed]?.text === ')'
    ) {
      this.at++;
      const sign = signed && this.tokens[this.at++]!.text === '-' ? -1 : 1;
      arg = sign * Number(this.tokens[this.at++]!.text);
      this.expect(')');
    }
    return { name, arg, pos: first.pos };
  }

  private toTarget(): { seconds: number } | { param: string } {
    const t = this.tok;
    if (t.kind === 'duration') {
      this.at++;
      if (t.seconds! < 1) this.fail('sub-second intervals are not supported', t.pos);
      return { seconds: Math.floor(t.seconds!) };
    }
    if (t.kind === 'param') {
      this.at++;
      return { param: t.text };
    }
    return this.fail(`expected a duration (such as 5m) or a $parameter, found ${this.describe(t)}`);
  }

  private byTags(): string[] {
    const tags: string[] = [];
    if (this.accept('by')) {
      do tags.push(this.name('a tag').text);
      while (this.accept(','));
    }
    return tags;
  }

  private transforms(): Transform[] {
    const out: Transform[] = [];
    for (;;) {
      const next = this.tokens[this.at + 1]?.text ?? '';
      if (this.is('|') && (next === 'replace' || next === 'join'))
        this.fail(`${next} is not supported`, this.tokens[this.at + 1]!.pos);
      if (!this.is('|') || !['map', 'align', 'group', 'bucket', 'as', 'offset'].includes(next)) return out;
      this.at++;
      const pos = this.tok.pos;
      const word = this.tokens[this.at++]!.text;
      switch (word) {
        case 'map': {
          const t = this.tok;
          if (t.kind === 'punct' && ['+', '-', '*', '/'].includes(t.text)) {
            this.at++;
            const n = this.value();
            if (n.kind !== 'int' && n.kind !== 'float') this.fail('map with an operator takes a number', n.pos);
            out.push({ kind: 'map', op: t.text as '+' | '-' | '*' | '/', operand: n.value, pos });
          } else out.push({ kind: 'map', func: this.func(), pos });
          break;
        }
        case 'align': {
          const to = this.accept('to') ? this.toTarget() : undefined;
          if (this.is('over')) this.fail('sliding windows (align … over) are not implemented');
          this.expect('using', '"using" and a function');
          out.push({ kind: 'align', to, using: this.func(), pos });
          break;
        }
        case 'group': {
          const by = this.byTags();
          this.expect('using', '"using" and a function');
          out.push({ kind: 'group', by, using: this.func(), pos });
          break;
        }
        case 'bucket': {
          const by = this.byTags();
          const to = this.accept('to') ? this.toTarget() : undefined;
          this.expect('using', '"using" and a function');
          const using = this.func();
          const args: Extract<Transform, { kind: 'bucket' }>['args'] = [];
          if (this.accept('(')) {
            if (!this.accept(')')) {
              do {
                const t = this.tok;
                const keyword = t.kind === 'ident' && ['true', 'false', 'null', 'inf'].includes(t.text);
                if ((t.kind === 'ident' && !keyword) || t.kind === 'quoted') {
                  this.at++;
                  args.push({ kind: 'ident', name: t.text, pos: t.pos });
                } else args.push(this.value());
              } while (this.accept(','));
              this.expect(')');
            }
          }
          out.push({ kind: 'bucket', by, to, using, args, pos });
          break;
        }
        case 'as':
          out.push({ kind: 'as', name: this.name('a name').text, pos });
          break;
        case 'offset': {
          let sign = 1;
          if (this.is('+') || this.is('-')) sign = this.tokens[this.at++]!.text === '-' ? -1 : 1;
          const t = this.tok;
          if (t.kind !== 'duration') this.fail(`expected a duration after offset, found ${this.describe(t)}`);
          this.at++;
          out.push({ kind: 'offset', seconds: sign * t.seconds!, pos });
          break;
        }
      }
    }
  }
}
