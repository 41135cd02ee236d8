/**
 * Syntax tree (parser.ts) → plan (plan.ts): checks what the grammar lets through (function names and their
 * arguments, parameters declared, given and of their type, `ifdef` on an optional parameter, one dataset),
 * resolves parameters from the request's `param__<name>` values (MPL literal text, reference metrics.md
 * §3.16), turns time ranges into whole seconds and moves `offset` to the sources. Pure; errors name line and
 * column.
 */
import type * as A from './ast.js';
import { MplError } from './errors.js';
import { lex, type Token } from './lexer.js';
import type {
  AlignFn,
  Branch,
  BucketSpec,
  CompareOp,
  ComputeOp,
  ExtendValue,
  GroupFn,
  MapFn,
  Plan,
  Range,
  Scalar,
  Stage,
  TagTest,
} from './plan.js';

export interface BindOptions {
  /** `param__<name>` → MPL literal text, as the API's `params`. */
  params?: Record<string, unknown>;
  /** Now, in whole seconds. */
  now: number;
  /** The request's range (startTime/endTime), when it gives one. */
  range?: Range;
}

/** A parameter's value once read: what its type holds. */
type ParamValue =
  | { type: 'Dataset'; name: string }
  | { type: 'Duration'; seconds: number }
  | { type: 'Regex'; pattern: string }
  | { type: 'array'; items: Scalar[] }
  | Scalar;

const MAP_PLAIN: Record<string, MapFn['kind']> = {
  abs: 'abs',
  rate: 'rate',
  increase: 'increase',
  'fill::prev': 'fill_prev',
  'interpolate::linear': 'interpolate',
};
const MAP_WITH_ARG: Record<string, 'min' | 'max' | 'fill_const'> = {
  min: 'min',
  max: 'max',
  'fill::const': 'fill_const',
};
const TESTS: Record<string, CompareOp> = { eq: '==', neq: '!=', gt: '>', gte: '>=', lt: '<', lte: '<=' };
const ALIGN: Record<string, AlignFn> = {
  avg: 'avg',
  sum: 'sum',
  min: 'min',
  max: 'max',
  count: 'count',
  last: 'last',
  'prom::rate': 'rate',
};
const GROUP: GroupFn[] = ['avg', 'sum', 'min', 'max', 'count'];
const COMPUTE: ComputeOp[] = ['min', 'max', 'avg'];
const BUCKETS = {
  histogram: 'histogram',
  interpolate_delta_histogram: 'delta',
  interpolate_cumulative_histogram: 'cumulative',
} as const;
const STATS = ['count', 'avg', 'sum', 'min', 'max'] as const;
/** The tag a bucket's output carries to tell its specs apart. */
export const SPEC_TAG = 'spec';
/** The furthest an offset, a window or a relative time reaches (ten years): times stay within what seconds hold. */
const MAX_SECONDS = 10 * 365 * 86_400;
/** The last second of year 9999: the latest time a range may name. */
const MAX_TIME = 253_402_300_799;
/** Values of all `in` arrays of a query together. */
const MAX_IN_VALUES = 10_000;

export function bindMpl(source: string, file: A.QueryFile, o: BindOptions): Plan {
  return new Binder(source, file, o).plan();
}

class Binder {
  private readonly declared = new Map<string, A.ParamDecl>();
  private readonly values = new Map<string, ParamValue>();
  private readonly warnings: string[] = [];
  private readonly datasets = new Set<string>();
  /** Optional parameters an `ifdef` guards at this point of the walk. */
  private readonly guarded = new Set<string>();
  private usedGuard = false;
  private inValues = 0;

  constructor(
    private readonly source: string,
    private readonly file: A.QueryFile,
    private readonly o: BindOptions,
  ) {}

  private fail(reason: string, pos: number): never {
    throw new MplError(reason, this.source, pos);
  }

  plan(): Plan {
    let customUnit: string | undefined;
    for (const d of this.file.directives) {
      if (d.name === 'custom_unit') {
        if (!d.value || !('kind' in d.value) || d.value.kind !== 'string')
          this.fail('custom_unit takes a string: set custom_unit = "ms";', d.pos);
        customUnit = d.value.value;
      } else this.warnings.push(`the directive "${d.name}" is not known to this service and was ignored`);
    }
    this.readParams();
    const query = this.branch(this.file.query, 0);
    if (this.datasets.size > 1)
      this.fail(
        `a query reads one dataset; this one names ${[...this.datasets].map((d) => `"${d}"`).join(' and ')}`,
        0,
      );
    return { query, dataset: [...this.datasets][0]!, customUnit, warnings: this.warnings };
  }

  private readParams(): void {
    for (const p of this.file.params) {
      if (this.declared.has(p.name)) this.fail(`The param $${p.name} is defined multiple times`, p.pos);
      this.declared.set(p.name, p);
    }
    const given = this.o.params ?? {};
    const undeclared: string[] = [];
    for (const key of Object.keys(given)) {
      if (!key.startsWith('param__')) continue;
      const name = key.slice('param__'.length);
      const decl = this.declared.get(name);
      if (!decl) {
        undeclared.push(`$${name}`);
        continue;
      }
      const text = given[key];
      if (typeof text !== 'string')
        throw new MplParamError(`params.${key} must be a string holding an MPL literal, such as "\\"text\\"" or "5m"`);
      this.values.set(name, readParam(decl, text, key));
    }
    if (undeclared.length > 0)
      this.warnings.push(`These params were provided but not declared: ${undeclared.join(', ')}`);
    const missing = this.file.params.filter((p) => !p.optional && !this.values.has(p.name)).map((p) => p.name);
    if (missing.length > 0)
      throw new MplParamError(`The following params were declared but not provided: ${missing.join(', ')}`);
  }

  /** A parameter's value where the query uses it; undefined for an optional one not given. */
  private param(name: string, pos: number): ParamValue | undefined {
    const decl = this.declared.get(name);
    if (!decl) this.fail(`The param $${name} is not defined`, pos);
    if (decl.optional) {
      if (!this.guarded.has(name))
        this.fail(`$${name} is optional (Option<${decl.type}>): use it inside ifdef($${name}) { … }`, pos);
      this.usedGuard = true;
    }
    return this.values.get(name);
  }

  private branch(q: A.Query, shift: number): Branch {
    if (q.kind === 'compute') {
      const own = this.offsetOf(q.transforms);
      const left = this.branch(q.left, shift + own);
      const right = this.branch(q.right, shift + own);
      let op: ComputeOp;
      if ('op' in q.using) op = q.using.op;
      else {
        const f = q.using;
        if (!COMPUTE.includes(f.name as ComputeOp) || f.arg !== undefined)
          this.fail(`Unsupported compute function: ${f.name} (one of +, -, *, /, min, max, avg)`, f.pos);
        op = f.name as ComputeOp;
      }
      return { kind: 'compute', left, right, name: q.name, op, stages: this.stages(q.transforms, []) };
    }
    const s = q.source;
    let dataset: string;
    if ('param' in s.dataset) {
      const v = this.param(s.dataset.param, s.pos);
      if (!v || v.type !== 'Dataset') this.fail(`$${s.dataset.param} is not a Dataset parameter`, s.pos);
      dataset = v.name;
    } else dataset = s.dataset.name;
    this.datasets.add(dataset);
    const shift2 = shift + this.offsetOf(q.transforms);
    if (Math.abs(shift2) > MAX_SECONDS) this.fail('the offsets reach past ten years', s.pos);
    if (q.sample !== undefined && !(q.sample > 0 && q.sample <= 1))
      this.fail(`sample takes the fraction of series to keep, above 0 and at most 1, not ${q.sample}`, s.pos);
    let test: TagTest = { kind: 'all' };
    const parts: TagTest[] = [];
    for (const f of q.filters) {
      if (f.deprecated) this.warnings.push('"filter" is deprecated: write "where"');
      if (f.ifdef) {
        const name = f.ifdef.param;
        const decl = this.declared.get(name);
        if (!decl) this.fail(`The param $${name} is not defined`, f.pos);
        if (!decl.optional) this.fail(`ifdef takes an optional parameter (Option<…>); $${name} is not`, f.pos);
        this.guarded.add(name);
        this.usedGuard = false;
        const inner = this.test(f.filter);
        if (!this.usedGuard) this.fail(`the ifdef($${name}) block does not use $${name}`, f.pos);
        this.guarded.delete(name);
        const given = this.values.has(name);
        if (given) parts.push(inner);
        else if (f.ifdef.otherwise) parts.push(this.test(f.ifdef.otherwise));
      } else parts.push(this.test(f.filter));
    }
    if (parts.length === 1) test = parts[0]!;
    else if (parts.length > 1) test = { kind: 'and', parts };
    const range = this.range(s);
    const extend: Stage[] =
      q.extend.length === 0
        ? []
        : [
            {
              kind: 'extend',
              tags: q.extend.map((e) => {
                if (q.extend.filter((x) => x.name === e.name).length > 1)
                  this.fail(`extend names the tag "${e.name}" twice`, e.pos);
                return { name: e.name, value: this.extendValue(e.value), pos: e.pos };
              }),
            },
          ];
    return {
      kind: 'source',
      dataset,
      metric: s.metric,
      name: s.alias ?? s.metric,
      range,
      shift: shift2,
      sample: q.sample,
      test,
      stages: this.stages(q.transforms, extend),
    };
  }

  /** The offsets of a pipeline, summed; each within ten years. */
  private offsetOf(list: A.Transform[]): number {
    let sum = 0;
    for (const t of list)
      if (t.kind === 'offset') {
        if (!(Math.abs(t.seconds) <= MAX_SECONDS)) this.fail('an offset reaches past ten years', t.pos);
        sum += Math.trunc(t.seconds);
      }
    return sum;
  }

  private range(s: A.Source): Range {
    const api = this.o.range;
    if (!s.range) {
      if (!api)
        this.fail(
          'the query has no time range: send startTime and endTime, or give the source one (`ds`:`metric`[1h..])',
          s.pos,
        );
      return api;
    }
    if (api)
      this.fail(
        'Time is provided both in the query and as a parameter: leave out startTime and endTime, or the range in the query',
        s.range.start.pos,
      );
    const now = this.o.now;
    const { start, end } = s.range;
    const within = (seconds: number, t: A.TimePoint): number => {
      if (!(seconds >= 0 && seconds <= MAX_TIME)) this.fail('a time of a range falls outside 1970 to 9999', t.pos);
      return seconds;
    };
    const abs = (t: A.TimePoint): number | undefined => {
      if (t.kind !== 'unix' && t.kind !== 'rfc3339' && !(t.seconds <= MAX_SECONDS))
        this.fail('a relative time reaches past ten years', t.pos);
      switch (t.kind) {
        case 'ago':
          return within(now - Math.floor(t.seconds), t);
        case 'unix':
          return within(t.seconds, t);
        case 'rfc3339': {
          const ms = Date.parse(t.text);
          if (Number.isNaN(ms)) this.fail(`"${t.text}" is not a time`, t.pos);
          return within(Math.floor(ms / 1000), t);
        }
        default:
          return undefined;
      }
    };
    if (start.kind === 'ahead') this.fail('the start of a range is a time, or -duration before its end', start.pos);
    if (end && end.kind === 'behind') this.fail('the end of a range is a time, or +duration after its start', end.pos);
    let a = abs(start);
    let b = end ? abs(end) : now;
    if (a === undefined && end?.kind === 'ahead')
      this.fail('one end of a range may be relative to the other, not both', end.pos);
    if (a === undefined) a = within(b! - Math.floor((start as { seconds: number }).seconds), start);
    if (b === undefined) b = within(a + Math.floor((end as { seconds: number }).seconds), end!);
    if (b < a) this.fail('the range ends before it starts', s.range.start.pos);
    return { start: a, end: b };
  }

  private scalar(v: A.Value, what: string): Scalar | ParamValue | undefined {
    switch (v.kind) {
      case 'param':
        return this.param(v.name, v.pos);
      case 'array':
        return this.fail(`${what} takes one value, not an array`, v.pos);
      case 'null':
        return { type: 'null' };
      default:
        return { type: v.kind, value: v.value } as Scalar;
    }
  }

  private test(f: A.Filter): TagTest {
    switch (f.kind) {
      case 'or':
      case 'and':
        return { kind: f.kind, parts: f.parts.map((p) => this.test(p)) };
      case 'not':
        return { kind: 'not', test: this.test(f.filter) };
      case 'is':
        return { kind: 'is', tag: f.tag, type: f.type };
      case 'regex':
        return this.regex(f.tag, f.pattern, f.negated, f.pos);
      case 'compare': {
        const v = this.scalar(f.value, 'a comparison');
        if (!v) return { kind: 'all' };
        if (v.type === 'Regex') {
          if (f.op !== '==' && f.op !== '!=')
            this.fail(`Unsupported regexp comparison: ${f.op} (use '==' or '!=' for regex comparisons)`, f.pos);
          return this.regex(f.tag, v.pattern, f.op === '!=', f.pos);
        }
        if (v.type === 'Dataset' || v.type === 'Duration' || v.type === 'array')
          this.fail(`a tag is not compared with a ${v.type} parameter`, f.pos);
        if ((v.type === 'string' || v.type === 'bool' || v.type === 'null') && f.op !== '==' && f.op !== '!=')
          this.fail(`Unsupported tag comparison: ${f.op} on a ${v.type} (only == and !=)`, f.pos);
        // `!=` is `not ==`: a series without the tag passes it.
        if (f.op === '!=') return { kind: 'not', test: { kind: 'compare', tag: f.tag, op: '==', value: v } };
        return { kind: 'compare', tag: f.tag, op: f.op, value: v };
      }
      case 'in': {
        let items: Scalar[];
        if (f.values.kind === 'array') items = f.values.items.map((i) => this.item(i));
        else if (f.values.kind === 'param') {
          const v = this.param(f.values.name, f.values.pos);
          if (!v) return { kind: 'all' };
          if (v.type !== 'array') this.fail(`in takes an array, and $${f.values.name} is not one`, f.pos);
          items = v.items;
        } else return this.fail('in takes an array ([1, 2]) or an array parameter', f.values.pos);
        this.inValues += items.length;
        if (this.inValues > MAX_IN_VALUES)
          this.fail(`the query's in arrays hold more than ${MAX_IN_VALUES} values: match a regex instead`, f.pos);
        return { kind: 'in', tag: f.tag, values: items };
      }
      case 'contains': {
        const v = this.scalar(f.value, 'contains');
        if (!v) return { kind: 'all' };
        if (!isScalar(v)) this.fail(`contains takes a value, not a ${v.type}`, f.pos);
        return { kind: 'contains', tag: f.tag, value: v };
      }
    }
  }

  private item(v: A.Value): Scalar {
    const s = this.scalar(v, 'an array item');
    if (!s || !isScalar(s)) return this.fail('an array holds strings, numbers, bools and nulls', v.pos);
    return s;
  }

  private regex(tag: string, pattern: string, negated: boolean, pos: number): TagTest {
    if (pattern.length > 1000) this.fail('the regex is longer than 1000 characters', pos);
    const t: TagTest = { kind: 'regex', tag, pattern };
    return negated ? { kind: 'not', test: t } : t;
  }

  private step(to: { seconds: number } | { param: string } | undefined, pos: number): number | undefined {
    if (!to) return undefined;
    if ('seconds' in to) {
      if (to.seconds > MAX_SECONDS) this.fail('the window is longer than ten years', pos);
      return to.seconds;
    }
    const v = this.param(to.param, pos);
    if (!v || v.type !== 'Duration') return this.fail(`$${to.param} is not a Duration parameter`, pos);
    return v.seconds;
  }

  private stages(list: A.Transform[], extend: Stage[]): Stage[] {
    const out: Stage[] = [];
    for (const t of list) {
      switch (t.kind) {
        case 'offset':
          break;
        case 'as':
          out.push({ kind: 'as', name: t.name });
          break;
        case 'map':
          out.push({ kind: 'map', fn: this.mapFn(t) });
          break;
        case 'align': {
          const fn = ALIGN[t.using.name];
          if (!fn || t.using.arg !== undefined)
            this.fail(
              `Unsupported align function: ${t.using.name} (one of avg, sum, min, max, count, last, prom::rate)`,
              t.using.pos,
            );
          out.push({ kind: 'align', step: this.step(t.to, t.pos), fn });
          break;
        }
        case 'group': {
          const fn = t.using.name as GroupFn;
          if (!GROUP.includes(fn) || t.using.arg !== undefined)
            this.fail(`Unsupported group function: ${t.using.name} (one of avg, sum, min, max, count)`, t.using.pos);
          out.push({ kind: 'group', by: unique(t.by), fn });
          break;
        }
        case 'bucket':
          out.push(this.bucket(t));
          break;
      }
    }
    return [...out, ...extend];
  }

  private mapFn(t: Extract<A.Transform, { kind: 'map' }>): MapFn {
    if (t.op) {
      if (t.op === '/' && t.operand === 0) this.fail('map / 0 divides by zero', t.pos);
      return { kind: 'arith', op: t.op, operand: t.operand! };
    }
    const f = t.func!;
    const plain = MAP_PLAIN[f.name];
    if (plain) {
      if (f.arg !== undefined) this.fail(`${f.name} takes no argument`, f.pos);
      return { kind: plain } as MapFn;
    }
    const withArg = MAP_WITH_ARG[f.name];
    const [family, test] = f.name.split('::');
    const op = test === undefined ? undefined : TESTS[test];
    if (!withArg && !((family === 'filter' || family === 'is') && op))
      this.fail(
        `Unsupported map function: ${f.name} (rate, increase, abs, min(x), max(x), fill::prev, fill::const(x), interpolate::linear, filter::eq|neq|gt|gte|lt|lte(x), is::eq|neq|gt|gte|lt|lte(x), or + - * / and a number)`,
        f.pos,
      );
    if (f.arg === undefined) this.fail(`${f.name} takes a number: ${f.name}(x)`, f.pos);
    if (withArg) return { kind: withArg, x: f.arg };
    return { kind: family as 'filter' | 'is', op: op!, x: f.arg };
  }

  private bucket(t: Extract<A.Transform, { kind: 'bucket' }>): Stage {
    const fn = BUCKETS[t.using.name as keyof typeof BUCKETS];
    if (!fn)
      this.fail(
        `Unsupported bucket function: ${t.using.name} (histogram, interpolate_delta_histogram, interpolate_cumulative_histogram)`,
        t.using.pos,
      );
    if (t.by.includes(SPEC_TAG))
      this.fail(`a bucket's outputs carry the tag "${SPEC_TAG}" for their spec: it cannot be grouped by`, t.pos);
    const args = [...t.args];
    let mode: 'rate' | 'increase' | undefined;
    const first = args[0];
    const isMode = first?.kind === 'ident' && (first.name === 'rate' || first.name === 'increase');
    if (fn === 'cumulative') {
      if (!isMode)
        this.fail(
          'interpolate_cumulative_histogram takes its conversion first: interpolate_cumulative_histogram(rate, …) or (increase, …)',
          first?.pos ?? t.using.pos,
        );
      mode = (first as { name: 'rate' | 'increase' }).name;
      args.shift();
    } else if (isMode)
      this.fail(`${t.using.name} takes no conversion (${(first as { name: string }).name})`, first.pos);
    if (args.length === 0) this.fail(`${t.using.name} takes one or more specs (count, avg, sum, 0.99, …)`, t.using.pos);
    const specs: BucketSpec[] = args.map((a) => {
      if (a.kind === 'ident') {
        const stat = STATS.find((s) => s === a.name);
        if (!stat) this.fail(`"${a.name}" is not a bucket spec (count, avg, sum, min, max, or a quantile)`, a.pos);
        if (fn === 'cumulative' && (stat === 'min' || stat === 'max'))
          this.fail(`${stat} is not available from a cumulative histogram (count, avg, sum or a quantile)`, a.pos);
        return { stat };
      }
      if ((a.kind === 'float' || a.kind === 'int') && a.value >= 0 && a.value <= 1) return { quantile: a.value };
      return this.fail('a bucket spec is count, avg, sum, min, max, or a quantile from 0 to 1', a.pos);
    });
    return { kind: 'bucket', by: unique(t.by), step: this.step(t.to, t.pos), fn, mode, specs };
  }

  private extendValue(v: A.Value): ExtendValue {
    const s = this.scalar(v, 'extend');
    if (!s) return { type: 'null' };
    if (!isScalar(s)) return this.fail(`extend takes a string, number or bool, not a ${s.type}`, v.pos);
    if (s.type !== 'string' || !s.value.includes('${')) return s;
    const parts: (string | { tag: string })[] = [];
    const text = s.value;
    let i = 0;
    while (i < text.length) {
      const at = text.indexOf('${', i);
      if (at < 0) {
        parts.push(text.slice(i));
        break;
      }
      if (at > i) parts.push(text.slice(i, at));
      const close = text.indexOf('}', at);
      if (close < 0) this.fail('"${" is not closed with "}" in the string', v.pos);
      const inner = text.slice(at + 2, close).trim();
      const tok = lex(inner).filter((x) => x.kind !== 'eof');
      if (tok.length !== 1) this.fail(`\${${inner}} is not a tag, a $parameter or a constant`, v.pos);
      const one = tok[0]!;
      if (one.kind === 'ident' || one.kind === 'quoted') parts.push({ tag: one.text });
      else if (one.kind === 'param') {
        const pv = this.param(one.text, v.pos);
        parts.push(pv ? paramText(pv) : '');
      } else if (one.kind === 'string' || one.kind === 'int' || one.kind === 'float') parts.push(one.text);
      else this.fail(`\${${inner}} is not a tag, a $parameter or a constant`, v.pos);
      i = close + 1;
    }
    return { parts };
  }
}

/** A parameter given a value it cannot hold, or left out: the request's fault, not the text's. */
export class MplParamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MplParamError';
  }
}

function isScalar(v: ParamValue): v is Scalar {
  return v.type === 'string' || v.type === 'int' || v.type === 'float' || v.type === 'bool' || v.type === 'null';
}

function paramText(v: ParamValue): string {
  switch (v.type) {
    case 'Dataset':
      return v.name;
    case 'Duration':
      return `${v.seconds}s`;
    case 'Regex':
      return v.pattern;
    case 'array':
      return v.items.map((i) => paramText(i)).join(',');
    case 'null':
      return 'null';
    default:
      return String(v.value);
  }
}

const unique = (list: string[]) => [...new Set(list)];

/** Reads a `param__<name>` value: MPL literal text of the declared type. */
function readParam(decl: A.ParamDecl, text: string, key: string): ParamValue {
  const bad = (why: string): never => {
    throw new MplParamError(
      `params.${key}: ${why} (a ${decl.type} parameter; got ${JSON.stringify(text.slice(0, 80))})`,
    );
  };
  const tokens = lex(text).filter((t) => t.kind !== 'eof');
  const err = tokens.find((t) => t.kind === 'error');
  if (err) bad(err.text);
  let sign = 1;
  let at = 0;
  if (tokens[0]?.kind === 'punct' && (tokens[0].text === '-' || tokens[0].text === '+')) {
    sign = tokens[0].text === '-' ? -1 : 1;
    at = 1;
  }
  const one = (): Token => {
    if (tokens.length !== at + 1) bad('expected one value');
    return tokens[at]!;
  };
  switch (decl.type) {
    case 'Dataset': {
      const t = one();
      if (at || (t.kind !== 'ident' && t.kind !== 'quoted')) bad('expected a dataset name, such as `my-metrics`');
      return { type: 'Dataset', name: t.text };
    }
    case 'Duration':
    case 'duration': {
      const t = one();
      if (at || t.kind !== 'duration' || !(t.seconds! >= 1 && t.seconds! <= MAX_SECONDS))
        bad('expected a duration from a second to ten years, such as 5m');
      return { type: 'Duration', seconds: Math.floor(t.seconds!) };
    }
    case 'Regex': {
      const t = one();
      if (at || t.kind !== 'regex') bad('expected a regex, such as #/^api/');
      return { type: 'Regex', pattern: t.text };
    }
    case 'array': {
      if (tokens[0]?.text !== '[' || tokens[tokens.length - 1]?.text !== ']')
        bad('expected an array, such as [1, "a"]');
      const items: Scalar[] = [];
      let i = 1;
      while (i < tokens.length - 1) {
        let s = 1;
        if (tokens[i]!.text === '-') {
          s = -1;
          i++;
        }
        const t = tokens[i]!;
        items.push(literal(t, s) ?? bad(`"${t.text}" is not a string, number, bool or null`));
        i++;
        if (i < tokens.length - 1 && tokens[i]!.text !== ',') bad('array items are separated by commas');
        i++;
      }
      return { type: 'array', items };
    }
    default: {
      const v = literal(one(), sign);
      if (decl.type === 'float' && v?.type === 'int') return { type: 'float', value: v.value };
      if (!v || v.type !== decl.type)
        return bad(`expected a ${decl.type}${decl.type === 'string' ? ' in double quotes' : ''}`);
      return v;
    }
  }
}

function literal(t: Token, sign: number): Scalar | undefined {
  switch (t.kind) {
    case 'string':
      return sign === 1 ? { type: 'string', value: t.text } : undefined;
    case 'int': {
      const n = sign * Number(t.text);
      return Number.isSafeInteger(n) ? { type: 'int', value: n } : undefined;
    }
    case 'float':
      return { type: 'float', value: sign * Number(t.text) };
    case 'ident':
      if (t.text === 'true' || t.text === 'false') return { type: 'bool', value: t.text === 'true' };
      if (t.text === 'null') return { type: 'null' };
      if (t.text === 'inf') return { type: 'float', value: sign * Infinity };
      return undefined;
    default:
      return undefined;
  }
}
