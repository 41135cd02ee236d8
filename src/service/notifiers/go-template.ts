/**
 * Go's text/template, the subset a custom webhook body needs (management.md §2.4): text and actions with
 * `{{-`/`-}}` trimming and comments; pipelines with `|`, parenthesised pipelines, variables (`$x :=`,
 * `$x =`, `$`); `if`/`else if`/`else`, `range` (with `$i, $e :=`, `else`, `break`, `continue`) and `with`;
 * fields (`.A.B`, `$x.A`); string, raw-string, number, bool and nil literals; and Go's built-in functions
 * (and, or, not, len, index, print, printf, println, eq, ne, lt, le, gt, ge, html, js, urlquery) plus any
 * the caller adds (Axiom's jsonObject and jsonArray).
 *
 * Written here because no maintained JavaScript package implements it: the one npm port is a 0.x that calls
 * itself naive and lacks `range`, trimming and parenthesised pipelines. Templates come from API callers, so
 * nothing is ever evaluated as JavaScript, and output and loop sizes are bounded.
 *
 * Pure: parse once (errors name the line), render many times.
 */
import { lookupTable } from '../../util/lookup.js';

export class TemplateError extends Error {}

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipe: Pipeline; line: number }
  | { kind: 'if' | 'with'; pipe: Pipeline; then: Node[]; else: Node[]; line: number }
  | { kind: 'range'; pipe: Pipeline; body: Node[]; else: Node[]; line: number }
  | { kind: 'break' | 'continue'; line: number };

interface Pipeline {
  decl: string[];
  assign: boolean;
  cmds: Arg[][];
}

type Arg =
  | { kind: 'field'; base: 'dot' | string; path: string[] }
  | { kind: 'func'; name: string }
  | { kind: 'literal'; value: unknown }
  | { kind: 'pipe'; pipe: Pipeline; path: string[] };

export type TemplateFunc = (...args: unknown[]) => unknown;

const MAX_OUTPUT = 1024 * 1024;
const MAX_STEPS = 1_000_000;

// ---- lexing actions ------------------------------------------------------------------------------------

type Tok = { t: 'id' | 'field' | 'var' | 'str' | 'num' | 'punct'; v: string; num?: number; at?: number };

function lexAction(src: string, line: number): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  const fail = (m: string): never => {
    throw new TemplateError(`line ${line}: ${m}`);
  };
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === '|' || c === ',') {
      toks.push({ t: 'punct', v: c, at: i });
      i++;
      continue;
    }
    if (c === ':' && src[i + 1] === '=') {
      toks.push({ t: 'punct', v: ':=' });
      i += 2;
      continue;
    }
    if (c === '=') {
      toks.push({ t: 'punct', v: '=' });
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let s = '';
      while (j < src.length && src[j] !== '"') {
        if (src[j] === '\\') {
          const e = src[j + 1];
          const map: Record<string, string> = {
            n: '\n',
            t: '\t',
            r: '\r',
            '\\': '\\',
            '"': '"',
            "'": "'",
            a: '\x07',
            b: '\b',
            f: '\f',
            v: '\v',
          };
          if (e === undefined || map[e] === undefined) fail(`unknown escape \\${e ?? ''} in a string`);
          s += map[e!];
          j += 2;
        } else s += src[j++];
      }
      if (j >= src.length) fail('unterminated string');
      toks.push({ t: 'str', v: s });
      i = j + 1;
      continue;
    }
    if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j < 0) fail('unterminated raw string');
      toks.push({ t: 'str', v: src.slice(i + 1, j) });
      i = j + 1;
      continue;
    }
    const num = /^[+-]?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/.exec(src.slice(i));
    if (num && !(c === '.' && /[A-Za-z_]/.test(src[i + 1] ?? ''))) {
      toks.push({ t: 'num', v: num[0], num: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    const name = /^(\$[A-Za-z0-9_]*|\.?[A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)/.exec(src.slice(i));
    if (name) {
      const head = name[1]!;
      const t = head.startsWith('$') ? 'var' : head.startsWith('.') ? 'field' : 'id';
      toks.push({ t, v: name[0], at: i });
      i += name[0].length;
      continue;
    }
    if (c === '.') {
      // The dot itself, or a field path on a parenthesised pipeline: `(...).A`.
      const path = /^\.((?:[A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z_][A-Za-z0-9_]*)*)?/.exec(src.slice(i))!;
      toks.push({ t: 'field', v: path[0], at: i });
      i += path[0].length;
      continue;
    }
    fail(`unexpected "${c}"`);
  }
  return toks;
}

// ---- parsing -------------------------------------------------------------------------------------------

interface RawAction {
  body: string;
  line: number;
}

/** Splits the text into text pieces and actions, applying trim markers and dropping comments. */
function split(src: string): (string | RawAction)[] {
  const out: (string | RawAction)[] = [];
  let i = 0;
  let line = 1;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    let text = src.slice(i, open < 0 ? src.length : open);
    if (trimNext) text = text.replace(/^\s+/, '');
    trimNext = false;
    if (open < 0) {
      out.push(text);
      break;
    }
    let start = open + 2;
    if (src[start] === '-' && /\s/.test(src[start + 1] ?? '')) {
      text = text.replace(/\s+$/, '');
      start += 2;
    }
    out.push(text);
    line += (src.slice(i, open).match(/\n/g) ?? []).length;
    const actionLine = line;
    let end: number;
    const body0 = src.slice(start).replace(/^\s*/, '');
    if (body0.startsWith('/*')) {
      const close = src.indexOf('*/', start);
      if (close < 0) throw new TemplateError(`line ${actionLine}: unclosed comment`);
      end = src.indexOf('}}', close + 2);
      if (end < 0) throw new TemplateError(`line ${actionLine}: unclosed action`);
      if (/\s-$/.test(src.slice(close + 2, end)) || src.slice(close + 2, end) === ' -') trimNext = true;
      line += (src.slice(open, end).match(/\n/g) ?? []).length;
      i = end + 2;
      continue;
    }
    end = findClose(src, start, actionLine);
    let body = src.slice(start, end);
    if (/\s-$/.test(body)) {
      body = body.slice(0, -2);
      trimNext = true;
    }
    out.push({ body, line: actionLine });
    line += (src.slice(open, end).match(/\n/g) ?? []).length;
    i = end + 2;
  }
  return out;
}

/** The `}}` that closes an action, skipping over strings (which may hold braces). */
function findClose(src: string, from: number, line: number): number {
  for (let i = from; i < src.length; i++) {
    const c = src[i];
    if (c === '"') {
      for (i++; i < src.length && src[i] !== '"'; i++) if (src[i] === '\\') i++;
    } else if (c === '`') {
      i = src.indexOf('`', i + 1);
      if (i < 0) break;
    } else if (c === '}' && src[i + 1] === '}') return i;
  }
  throw new TemplateError(`line ${line}: unclosed action`);
}

class Parser {
  private i = 0;
  private loops = 0;
  constructor(private readonly parts: (string | RawAction)[]) {}

  /** Nodes until one of the keywords in `stop`, which is returned with its remaining text. */
  list(stop: string[]): { nodes: Node[]; end?: { word: string; rest: string; line: number } } {
    const nodes: Node[] = [];
    while (this.i < this.parts.length) {
      const p = this.parts[this.i++]!;
      if (typeof p === 'string') {
        if (p) nodes.push({ kind: 'text', text: p });
        continue;
      }
      const m = /^\s*([a-z]+)\b\s*([\s\S]*)$/.exec(p.body);
      const word = m?.[1];
      if (word && stop.includes(word)) return { nodes, end: { word, rest: m![2]!.trim(), line: p.line } };
      if (word === 'end' || word === 'else') throw new TemplateError(`line ${p.line}: unexpected {{${word}}}`);
      if (word === 'if' || word === 'with') nodes.push(this.branch(word, m![2]!, p.line));
      else if (word === 'range') nodes.push(this.range(m![2]!, p.line));
      else if (word === 'break' || word === 'continue') {
        if (this.loops === 0) throw new TemplateError(`line ${p.line}: {{${word}}} outside {{range}}`);
        nodes.push({ kind: word, line: p.line });
      } else if (word === 'define' || word === 'template' || word === 'block') {
        throw new TemplateError(`line ${p.line}: {{${word}}} is not supported in a notifier template`);
      } else nodes.push({ kind: 'action', pipe: parsePipeline(p.body, p.line), line: p.line });
    }
    return { nodes };
  }

  private branch(kind: 'if' | 'with', text: string, line: number): Node {
    const pipe = parsePipeline(text, line);
    const then = this.list(['else', 'end']);
    if (!then.end) throw new TemplateError(`line ${line}: {{${kind}}} without {{end}}`);
    let els: Node[] = [];
    if (then.end.word === 'else') {
      const chained = /^(if|with)\b([\s\S]*)$/.exec(then.end.rest);
      if (chained) els = [this.branch(chained[1] as 'if' | 'with', chained[2]!, then.end.line)];
      else {
        const rest = this.list(['end']);
        if (!rest.end) throw new TemplateError(`line ${line}: {{${kind}}} without {{end}}`);
        els = rest.nodes;
      }
    }
    return { kind, pipe, then: then.nodes, else: els, line };
  }

  private range(text: string, line: number): Node {
    const pipe = parsePipeline(text, line);
    this.loops++;
    const body = this.list(['else', 'end']);
    this.loops--;
    if (!body.end) throw new TemplateError(`line ${line}: {{range}} without {{end}}`);
    let els: Node[] = [];
    if (body.end.word === 'else') {
      const rest = this.list(['end']);
      if (!rest.end) throw new TemplateError(`line ${line}: {{range}} without {{end}}`);
      els = rest.nodes;
    }
    return { kind: 'range', pipe, body: body.nodes, else: els, line };
  }
}

function parsePipeline(text: string, line: number): Pipeline {
  const toks = lexAction(text, line);
  let k = 0;
  const fail = (m: string): never => {
    throw new TemplateError(`line ${line}: ${m}`);
  };
  const pipeline = (inParens: boolean): Pipeline => {
    const decl: string[] = [];
    let assign = false;
    // `$x :=`, `$i, $e :=`, `$x =`
    const save = k;
    while (toks[k]?.t === 'var') {
      decl.push(toks[k]!.v);
      k++;
      if (toks[k]?.v === ',') {
        k++;
        continue;
      }
      break;
    }
    if (decl.length && (toks[k]?.v === ':=' || toks[k]?.v === '=')) {
      assign = toks[k]!.v === '=';
      k++;
    } else {
      decl.length = 0;
      k = save;
    }
    const cmds: Arg[][] = [];
    for (;;) {
      const cmd: Arg[] = [];
      while (k < toks.length && toks[k]!.v !== '|' && !(inParens && toks[k]!.v === ')')) cmd.push(operand());
      if (!cmd.length) fail('missing value in a pipeline');
      cmds.push(cmd);
      if (toks[k]?.v === '|') {
        k++;
        continue;
      }
      break;
    }
    return { decl, assign, cmds };
  };
  const path = (v: string) => v.split('.').filter((s) => s !== '');
  const operand = (): Arg => {
    const t = toks[k++]!;
    switch (t.t) {
      case 'str':
        return { kind: 'literal', value: t.v };
      case 'num':
        if (Number.isNaN(t.num)) fail(`bad number ${t.v}`);
        return { kind: 'literal', value: t.num };
      case 'field':
        return { kind: 'field', base: 'dot', path: path(t.v) };
      case 'var': {
        const [name, ...rest] = t.v.split('.');
        return { kind: 'field', base: name!, path: rest };
      }
      case 'id':
        if (t.v.includes('.')) fail(`unexpected "${t.v}"`);
        if (t.v === 'true' || t.v === 'false') return { kind: 'literal', value: t.v === 'true' };
        if (t.v === 'nil') return { kind: 'literal', value: null };
        return { kind: 'func', name: t.v };
      case 'punct':
        if (t.v === '(') {
          const inner = pipeline(true);
          const close = toks[k++];
          if (close?.v !== ')') fail('unclosed "("');
          let p: string[] = [];
          // `(pipeline).Field`: a field path right after the parenthesis, with no space between.
          if (toks[k]?.t === 'field' && toks[k]!.at === close!.at! + 1) p = path(toks[k++]!.v);
          return { kind: 'pipe', pipe: inner, path: p };
        }
        return fail(`unexpected "${t.v}"`);
    }
  };
  const p = pipeline(false);
  if (k < toks.length) fail(`unexpected "${toks[k]!.v}"`);
  return p;
}

export interface Template {
  nodes: Node[];
}

export function parseTemplate(src: string): Template {
  const parser = new Parser(split(src));
  const { nodes, end } = parser.list([]);
  if (end) throw new TemplateError(`line ${end.line}: unexpected {{${end.word}}}`);
  return { nodes };
}

// ---- rendering -----------------------------------------------------------------------------------------

/** How Go's fmt prints a value with %v. */
export function goPrint(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `[${v.map(goPrint).join(' ')}]`;
  if (typeof v === 'object') {
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goPrint((v as Record<string, unknown>)[k])}`)
      .join(' ')}]`;
  }
  return String(v);
}

function goNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n);
  if (!Number.isFinite(n)) return Number.isNaN(n) ? 'NaN' : n > 0 ? '+Inf' : '-Inf';
  const s = String(n);
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object' && !(v instanceof Date)) return Object.keys(v).length > 0;
  return true;
}

class Break {}
class Continue {}

function compare(name: string, a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  throw new TemplateError(`${name}: cannot compare ${goType(a)} with ${goType(b)}`);
}

function goType(v: unknown): string {
  return v === null || v === undefined ? 'nil' : Array.isArray(v) ? 'slice' : typeof v === 'object' ? 'map' : typeof v;
}

function printf(format: string, ...args: unknown[]): string {
  let n = 0;
  return (
    format.replace(
      /%([-+# 0]*)(\d+)?(?:\.(\d+))?([%vsdqftxXgeT])/g,
      (_all, flags: string, width: string | undefined, prec: string | undefined, verb: string) => {
        if (verb === '%') return '%';
        if (n >= args.length) return `%!${verb}(MISSING)`;
        const a = args[n++];
        let s: string;
        switch (verb) {
          case 'd':
            s = typeof a === 'number' ? String(Math.trunc(a)) : `%!d(${goType(a)}=${goPrint(a)})`;
            break;
          case 'f':
            s =
              typeof a === 'number'
                ? a.toFixed(prec === undefined ? 6 : Number(prec))
                : `%!f(${goType(a)}=${goPrint(a)})`;
            break;
          case 'e':
            s =
              typeof a === 'number'
                ? a.toExponential(prec === undefined ? 6 : Number(prec)).replace(/e([+-])(\d)$/, 'e$10$2')
                : goPrint(a);
            break;
          case 'g':
            s = typeof a === 'number' ? goNumber(a) : goPrint(a);
            break;
          case 'q':
            s = JSON.stringify(typeof a === 'string' ? a : goPrint(a));
            break;
          case 't':
            s = typeof a === 'boolean' ? String(a) : `%!t(${goType(a)}=${goPrint(a)})`;
            break;
          case 'x':
          case 'X': {
            s = typeof a === 'number' ? Math.trunc(a).toString(16) : Buffer.from(goPrint(a)).toString('hex');
            if (verb === 'X') s = s.toUpperCase();
            break;
          }
          case 'T':
            s = goType(a);
            break;
          default:
            s = goPrint(a);
            if (verb === 's' && prec !== undefined) s = s.slice(0, Number(prec));
        }
        const w = width === undefined ? 0 : Number(width);
        if (s.length < w)
          s = flags.includes('-') ? s.padEnd(w) : s.padStart(w, flags.includes('0') && verb !== 's' ? '0' : ' ');
        return s;
      },
    ) +
    (n < args.length
      ? `%!(EXTRA ${args
          .slice(n)
          .map((a) => `${goType(a)}=${goPrint(a)}`)
          .join(', ')})`
      : '')
  );
}

const BUILTINS: Record<string, TemplateFunc> = lookupTable({
  // and/or are evaluated lazily in call(); these entries only make the names known.
  and: () => undefined,
  or: () => undefined,
  not: (a) => !truthy(a),
  len: (a) => {
    if (typeof a === 'string') return Buffer.byteLength(a);
    if (Array.isArray(a)) return a.length;
    if (a && typeof a === 'object') return Object.keys(a).length;
    throw new TemplateError(`len of ${goType(a)}`);
  },
  index: (a, ...keys) => {
    let v = a;
    for (const k of keys) {
      if (Array.isArray(v) && typeof k === 'number') {
        if (k < 0 || k >= v.length) throw new TemplateError(`index out of range: ${k}`);
        v = v[k];
      } else if (v && typeof v === 'object' && typeof k === 'string') v = (v as Record<string, unknown>)[k];
      else throw new TemplateError(`cannot index ${goType(v)} with ${goType(k)}`);
    }
    return v;
  },
  print: (...args) =>
    args
      .map((a, i) => (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string' ? ' ' : '') + goPrint(a))
      .join(''),
  println: (...args) => `${args.map(goPrint).join(' ')}\n`,
  printf: (f, ...args) => printf(String(f), ...args),
  eq: (a, ...bs) => {
    if (!bs.length) throw new TemplateError('eq: missing argument for comparison');
    return bs.some((b) => a === b || (a == null && b == null));
  },
  ne: (a, b) => !(a === b || (a == null && b == null)),
  lt: (a, b) => compare('lt', a, b) < 0,
  le: (a, b) => compare('le', a, b) <= 0,
  gt: (a, b) => compare('gt', a, b) > 0,
  ge: (a, b) => compare('ge', a, b) >= 0,
  html: (...a) =>
    a
      .map(goPrint)
      .join('')
      .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })[c]!),
  js: (...a) =>
    a
      .map(goPrint)
      .join('')
      .replace(/[\\'"<>&=\n\r]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`),
  urlquery: (...a) => encodeURIComponent(a.map(goPrint).join('')).replace(/%20/g, '+'),
});

/** What `range` walks: a slice, a map in key order, or an integer counted up from 0 (Go 1.22), lazily. */
function rangeEntries(v: unknown, line: number): { size: number; items(): Iterable<[unknown, unknown]> } {
  if (Array.isArray(v)) return { size: v.length, items: () => v.map((e, i) => [i, e] as [unknown, unknown]) };
  if (typeof v === 'number') {
    const n = Math.max(0, Math.trunc(v));
    return {
      size: n,
      *items() {
        for (let i = 0; i < n; i++) yield [i, i];
      },
    };
  }
  if (v === null || v === undefined) return { size: 0, items: () => [] };
  if (typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return {
      size: keys.length,
      items: () => keys.map((k) => [k, (v as Record<string, unknown>)[k]] as [unknown, unknown]),
    };
  }
  throw new TemplateError(`line ${line}: range can't iterate over ${goPrint(v)}`);
}

export function renderTemplate(t: Template, data: unknown, funcs: Record<string, TemplateFunc> = {}): string {
  const fns: Record<string, TemplateFunc> = lookupTable({ ...BUILTINS, ...funcs });
  let out = '';
  let steps = 0;
  const scopes: Map<string, unknown>[] = [new Map([['$', data]])];
  const lookupVar = (name: string, line: number): unknown => {
    for (let i = scopes.length - 1; i >= 0; i--) if (scopes[i]!.has(name)) return scopes[i]!.get(name);
    throw new TemplateError(`line ${line}: undefined variable ${name}`);
  };
  const field = (v: unknown, path: string[], line: number): unknown => {
    for (const p of path) {
      if (v === null || v === undefined) throw new TemplateError(`line ${line}: nil pointer evaluating .${p}`);
      if (typeof v !== 'object' || Array.isArray(v))
        throw new TemplateError(`line ${line}: can't evaluate field ${p} in type ${goType(v)}`);
      if (!Object.hasOwn(v, p)) throw new TemplateError(`line ${line}: can't evaluate field ${p}`);
      v = (v as Record<string, unknown>)[p];
    }
    return v;
  };
  const evalArg = (a: Arg, dot: unknown, line: number): unknown => {
    switch (a.kind) {
      case 'literal':
        return a.value;
      case 'field':
        return field(a.base === 'dot' ? dot : lookupVar(a.base, line), a.path, line);
      case 'pipe':
        return field(evalPipe(a.pipe, dot, line), a.path, line);
      case 'func':
        return call(a.name, [], dot, line);
    }
  };
  const call = (name: string, args: Arg[], dot: unknown, line: number, piped?: { v: unknown }): unknown => {
    const f = fns[name];
    if (!f) throw new TemplateError(`line ${line}: function "${name}" not defined`);
    // and/or evaluate lazily, as in Go 1.18+.
    if (name === 'and' || name === 'or') {
      const all = [...args.map((x) => () => evalArg(x, dot, line)), ...(piped ? [() => piped.v] : [])];
      if (!all.length) throw new TemplateError(`line ${line}: ${name} needs arguments`);
      let v: unknown;
      for (const get of all) {
        v = get();
        if (name === 'and' ? !truthy(v) : truthy(v)) return v;
      }
      return v;
    }
    const vals = args.map((x) => evalArg(x, dot, line));
    if (piped) vals.push(piped.v);
    try {
      return f(...vals);
    } catch (e) {
      if (e instanceof TemplateError && !e.message.startsWith('line '))
        throw new TemplateError(`line ${line}: ${e.message}`);
      throw e;
    }
  };
  const evalPipe = (p: Pipeline, dot: unknown, line: number): unknown => {
    let piped: { v: unknown } | undefined;
    for (const cmd of p.cmds) {
      const [head, ...rest] = cmd;
      let v: unknown;
      if (head!.kind === 'func') v = call(head!.name, rest, dot, line, piped);
      else {
        if (rest.length || piped) throw new TemplateError(`line ${line}: can't give arguments to a non-function value`);
        v = evalArg(head!, dot, line);
      }
      piped = { v };
    }
    const v = piped!.v;
    if (p.decl.length === 1) {
      if (p.assign) {
        let done = false;
        for (let i = scopes.length - 1; i >= 0 && !done; i--)
          if (scopes[i]!.has(p.decl[0]!)) {
            scopes[i]!.set(p.decl[0]!, v);
            done = true;
          }
        if (!done) throw new TemplateError(`line ${line}: undefined variable ${p.decl[0]}`);
      } else scopes[scopes.length - 1]!.set(p.decl[0]!, v);
    }
    return v;
  };
  const emit = (s: string) => {
    out += s;
    if (out.length > MAX_OUTPUT) throw new TemplateError(`the rendered template is larger than ${MAX_OUTPUT} bytes`);
  };
  const run = (nodes: Node[], dot: unknown): void => {
    for (const n of nodes) {
      if (++steps > MAX_STEPS) throw new TemplateError('the template takes too many steps');
      switch (n.kind) {
        case 'text':
          emit(n.text);
          break;
        case 'action': {
          const v = evalPipe(n.pipe, dot, n.line);
          if (!n.pipe.decl.length) emit(v === undefined ? '<no value>' : goPrint(v));
          break;
        }
        case 'if':
        case 'with': {
          scopes.push(new Map());
          try {
            const v = evalPipe(n.pipe, dot, n.line);
            if (truthy(v)) run(n.then, n.kind === 'with' ? v : dot);
            else run(n.else, dot);
          } finally {
            scopes.pop();
          }
          break;
        }
        case 'range': {
          scopes.push(new Map());
          try {
            const decl = n.pipe.decl;
            const v = evalPipe({ ...n.pipe, decl: [] }, dot, n.line);
            const entries = rangeEntries(v, n.line);
            if (entries.size === 0) run(n.else, dot);
            for (const [k, e] of entries.items()) {
              if (decl.length === 1) scopes[scopes.length - 1]!.set(decl[0]!, e);
              if (decl.length === 2) {
                scopes[scopes.length - 1]!.set(decl[0]!, k);
                scopes[scopes.length - 1]!.set(decl[1]!, e);
              }
              try {
                run(n.body, e);
              } catch (x) {
                if (x instanceof Break) break;
                if (!(x instanceof Continue)) throw x;
              }
            }
          } finally {
            scopes.pop();
          }
          break;
        }
        case 'break':
          throw new Break();
        case 'continue':
          throw new Continue();
      }
    }
  };
  run(t.nodes, data);
  return out;
}
