/**
 * An APL pipeline over one event at a time (`where status >= 500 | extend slow = d > 1s | project-away
 * secret`), parsed, bound and compiled once into closures (./compile.ts): an agent's `apl` transform runs
 * it on every event it sees, never through DuckDB. Errors name the line and column in the pipeline's text.
 */
import type { BExpr } from '../binder/bound.js';
import { bindEventExpression, bindEventPipeline, type EventStage } from '../binder/event-pipeline.js';
import { sortNames, wildcardMatch } from '../binder/relation.js';
import type { NamePattern } from '../parser/ast.js';
import { parseExpression, parsePipeline } from '../parser/parser.js';
import { compileExpr, type Ev, type Row } from './compile.js';
import { formatRfc3339Nano } from '../../util/time.js';
import { converter, goDuration, toDynamicValue } from './values.js';
import { redactor, type RedactOptions } from '../functions/redact.js';

/** The event a pipeline works on: its fields, and the changes it makes (an agent Event keeps its text right). */
export interface EventFields {
  readonly data: Readonly<Record<string, unknown>>;
  set(key: string, value: unknown): void;
  /** Sets a field (extend), where the event can keep its own text for one it lacks. */
  put(key: string, value: unknown, keyJson: string): void;
  delete(key: string): void;
  /** The event becomes exactly these fields, in this order. */
  replace(fields: Record<string, unknown>): void;
}

/** One operator, compiled: false when the event is dropped. */
type Step = (e: EventFields) => boolean;

export interface EventPipeline {
  /** Runs the pipeline on an event, changing it; false when an operator (`where`) drops it. */
  run(e: EventFields): boolean;
  /** The operators as bound, one per line, each expression with its type (for `ferry validate`). */
  describe(): string[];
}

/**
 * @param onError told of each expression that failed on an event (it gave null)
 * @throws AplError naming the line and column of what is wrong in `text`
 */
export function compileEventPipeline(text: string, onError: (err: unknown) => void = () => undefined): EventPipeline {
  const stages = bindEventPipeline(parsePipeline(text), text);
  const ctx = { src: text, guard: guardWith(onError), onError };
  const steps = stages.map((s) => step(s, ctx));
  return {
    describe: () => stages.map(describeStage),
    run(e) {
      for (let i = 0; i < steps.length; i++) if (!steps[i]!(e)) return false;
      return true;
    },
  };
}

/**
 * One condition over an event (a route's, a sample's `keep`), compiled as a `where` predicate is: true only
 * when it holds true; null, and an expression that fails on the event (counted through `onError`), are false.
 * @throws AplError naming the line and column of what is wrong in `text`
 */
export function compileEventCondition(
  text: string,
  onError: (err: unknown) => void = () => undefined,
): (data: Row) => boolean {
  const predicate = bindEventExpression(parseExpression(text), text, true);
  return predicateOf(predicate, { src: text, guard: guardWith(onError) });
}

/** A condition as bound, written out (for `ferry validate`). */
export function describeEventCondition(text: string): string {
  return exprText(bindEventExpression(parseExpression(text), text, true));
}

// An expression that throws on an event gives null, as a query's TRY does, and is counted: the event
// goes on, and its line is never acknowledged without it.
const guardWith =
  (onError: (err: unknown) => void) =>
  (ev: Ev): Ev =>
  (row) => {
    try {
      return ev(row);
    } catch (err) {
      onError(err);
      return null;
    }
  };

function predicateOf(predicate: BExpr, ctx: { src: string; guard: (ev: Ev) => Ev }): (data: Row) => boolean {
  const p = compileExpr(predicate, ctx);
  const toBool = converter('dynamic', 'bool');
  const test = ctx.guard(predicate.type === 'bool' ? p : (row: Row) => toBool(p(row)));
  return (data) => test(data) === true;
}

function step(s: EventStage, ctx: { src: string; guard: (ev: Ev) => Ev; onError: (err: unknown) => void }): Step {
  switch (s.kind) {
    case 'where': {
      const test = predicateOf(s.predicate, ctx);
      return (e) => test(e.data);
    }
    case 'extend': {
      const items = s.items.map((i) => ({ name: i.name, json: JSON.stringify(i.name), value: fieldOf(i.expr, ctx) }));
      return (e) => {
        for (const i of items) e.put(i.name, i.value(e.data), i.json);
        return true;
      };
    }
    case 'project': {
      const items = s.items.map((i) => ({ name: i.name, value: fieldOf(i.expr, ctx) }));
      return (e) => {
        const out: Record<string, unknown> = {};
        for (const i of items) setOwn(out, i.name, i.value(e.data));
        e.replace(out);
        return true;
      };
    }
    case 'project-away': {
      const matches = matcher(s.patterns);
      // Names alone: each looked up, not every field of the event matched against them.
      if (s.patterns.every((p) => !p.wildcard)) {
        const names = s.patterns.map((p) => p.pattern);
        return (e) => {
          for (const k of names) if (e.data[k] !== undefined) e.delete(k);
          return true;
        };
      }
      return (e) => {
        for (const k of Object.keys(e.data)) if (matches(k)) e.delete(k);
        return true;
      };
    }
    case 'project-keep': {
      const matches = matcher(s.patterns);
      return (e) => {
        for (const k of Object.keys(e.data)) if (!matches(k)) e.delete(k);
        return true;
      };
    }
    case 'project-rename':
      return (e) => {
        for (const { name, from } of s.items) {
          const had = e.data[from] !== undefined && Object.hasOwn(e.data, from);
          const v = e.data[from];
          e.delete(from);
          // A field renamed from one the event lacks is null: the event lacks it too.
          if (had) e.set(name, v);
          else e.delete(name);
        }
        return true;
      };
    case 'redact':
      return redactStep(s.options, s.fields, ctx.onError);
    case 'project-reorder':
      return (e) => {
        const keys = Object.keys(e.data);
        const front: string[] = [];
        for (const item of s.items) {
          const m = keys.filter(
            (k) =>
              !front.includes(k) &&
              (item.pattern.wildcard ? wildcardMatch(item.pattern.pattern, k) : item.pattern.pattern === k),
          );
          const ordered = item.order
            ? sortNames(
                m.map((name) => ({ name, type: 'dynamic' as const, alias: name })),
                item.order,
              ).map((c) => c.name)
            : m;
          front.push(...ordered);
        }
        const out: Record<string, unknown> = {};
        for (const k of front) setOwn(out, k, e.data[k]);
        for (const k of keys) if (!Object.hasOwn(out, k)) setOwn(out, k, e.data[k]);
        e.replace(out);
        return true;
      };
  }
}

/** What redact may make of one value at most: a token longer than one character multiplies the text. */
const MAX_REDACTED_CHARS = 1 << 20;

/** Objects nested deeper than this are masked as their JSON text, as the store keeps them. */
const REDACT_MAX_DEPTH = 100;

/**
 * redact over an event: every string among the fields named (wildcards too) or all of them, inside
 * objects as well, by the dotted name the store gives a nested field (`user.email`). Strings in arrays and
 * numbers whose text matches are masked too: a field the store widened to a string would be. A value
 * nested past 100 levels is masked as its JSON text. A field redact cannot mask (past its bound, or past
 * the stack) becomes null: the text it held is never let through.
 */
function redactStep(options: RedactOptions, fields: NamePattern[] | undefined, onError: (err: unknown) => void): Step {
  const mask = redactor(options);
  const limits = {
    maxChars: MAX_REDACTED_CHARS,
    overtime: () => false,
    stop: () => new RangeError(`redact would make a value longer than ${MAX_REDACTED_CHARS} characters`),
  };
  const applies = fields ? matcher(fields) : () => true;
  const redacted = (v: unknown, path: string, depth: number): unknown => {
    if (typeof v === 'string') return applies(path) ? mask(v, limits) : v;
    if (typeof v === 'number') {
      if (!applies(path)) return v;
      const text = String(v);
      const out = mask(text, limits);
      return out === text ? v : out;
    }
    if (v === null || typeof v !== 'object') return v;
    if (depth > REDACT_MAX_DEPTH) return applies(path) ? mask(JSON.stringify(v), limits) : v;
    if (Array.isArray(v)) {
      let copy: unknown[] | undefined;
      v.forEach((inner, i) => {
        const out = redacted(inner, path, depth + 1);
        if (out !== inner) (copy ??= [...v])[i] = out;
      });
      return copy ?? v;
    }
    let copy: Record<string, unknown> | undefined;
    for (const [k, inner] of Object.entries(v)) {
      const out = redacted(inner, `${path}.${k}`, depth + 1);
      if (out !== inner) setOwn((copy ??= { ...(v as Record<string, unknown>) }), k, out);
    }
    return copy ?? v;
  };
  return (e) => {
    for (const k of Object.keys(e.data)) {
      const v = e.data[k];
      if (v === undefined || v === null || typeof v === 'boolean') continue;
      let out: unknown;
      try {
        out = redacted(v, k, 1);
      } catch (err) {
        onError(err);
        out = null;
      }
      if (out !== v) e.set(k, out);
    }
    return true;
  };
}

/** An expression's value as the event's field holds it (JSON), guarded: one that fails is null. */
function fieldOf(e: BExpr, ctx: { src: string; guard: (ev: Ev) => Ev }): Ev {
  const ev = compileExpr(e, ctx);
  return ctx.guard((row) => toDynamicValue(ev(row), e.type));
}

/** Sets an own property, `__proto__` included (an assignment to it would set the object's prototype). */
export function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  else o[key] = value;
}

function matcher(patterns: readonly NamePattern[]): (name: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.wildcard).map((p) => p.pattern));
  const wild = patterns.filter((p) => p.wildcard).map((p) => p.pattern);
  return (name) => exact.has(name) || wild.some((w) => wildcardMatch(w, name));
}

const patternsText = (ps: readonly NamePattern[]) => ps.map((p) => p.pattern).join(', ');

/** An operator as bound: each expression written out, with the type it has. */
function describeStage(s: EventStage): string {
  switch (s.kind) {
    case 'where':
      return `where ${exprText(s.predicate)}`;
    case 'extend':
    case 'project':
      return `${s.kind} ${s.items.map((i) => `${i.name}: ${i.expr.type} = ${exprText(i.expr)}`).join(', ')}`;
    case 'project-away':
    case 'project-keep':
      return `${s.kind} ${patternsText(s.patterns)}`;
    case 'project-rename':
      return `project-rename ${s.items.map((i) => `${i.name} = ${i.from}`).join(', ')}`;
    case 'redact':
      return `redact ${s.options.patterns.map((p) => JSON.stringify(p)).join(', ')}${s.fields ? ` on ${patternsText(s.fields)}` : ''}${s.options.hash ? ' with hash' : ` with ${JSON.stringify(s.options.token)}`}${s.options.groups ? ', groups only' : ''}`;
    case 'project-reorder':
      return `project-reorder ${s.items.map((i) => `${i.pattern.pattern}${i.order ? ` ${i.order}` : ''}`).join(', ')}`;
  }
}

const INFIX = new Set(['+', '-', '*', '/', '%', '==', '!=', '<', '<=', '>', '>=', 'and', 'or']);
/** String operators, without their `!` and `_cs`. */
const STRING_OPERATORS = new Set([
  'contains',
  'startswith',
  'endswith',
  'has',
  'hasprefix',
  'hassuffix',
  '=~',
  '~',
  'matches regex',
]);

/** A bound expression as text: fields by name (`field` when the event gives its type), calls, operators. */
export function exprText(e: BExpr): string {
  switch (e.k) {
    case 'lit':
      if (e.value === null) return 'null';
      if (e.type === 'timespan') return goDuration(BigInt(e.value as bigint));
      if (e.type === 'datetime') return `datetime(${formatRfc3339Nano(BigInt(e.value as bigint))})`;
      return typeof e.value === 'string' || e.type === 'dynamic' ? JSON.stringify(e.value) : String(e.value);
    case 'col':
      return e.open && e.type === 'dynamic' ? e.name : `${e.name}:${e.type}`;
    case 'path':
      return `${exprText(e.target)}${e.path.map((p) => (typeof p === 'string' ? `.${p}` : typeof p === 'number' ? `[${p}]` : `[${exprText(p)}]`)).join('')}`;
    case 'hidden':
      return e.alias === '__now' ? 'now' : e.alias;
    case 'in':
      return `${exprText(e.left)} ${e.op} (${e.items.map(exprText).join(', ')})`;
    case 'between':
      return `${exprText(e.left)} ${e.negated ? '!between' : 'between'} (${exprText(e.low)} .. ${exprText(e.high)})`;
    case 'has_any':
      return `${exprText(e.left)} ${e.caseSensitive ? 'has_any_cs' : 'has_any'} (${e.terms.map((t) => JSON.stringify(t)).join(', ')})`;
    case 'call':
    case 'agg': {
      const [a, b] = e.args;
      const bare = e.fn.replace(/^!/, '').replace(/_cs$/, '');
      if (e.args.length === 2 && (INFIX.has(e.fn) || STRING_OPERATORS.has(bare)))
        return `(${exprText(a!)} ${e.fn} ${exprText(b!)})`;
      if (e.fn === 'not#') return `not(${exprText(a!)})`;
      if (e.fn === 'unary-') return `-${exprText(a!)}`;
      // now() and ago() read the time the event passes: it is their first argument, not written.
      const args = e.args.filter((x) => !(x.k === 'hidden' && x.alias === '__now'));
      return `${e.fn}(${args.map(exprText).join(', ')})`;
    }
  }
}
