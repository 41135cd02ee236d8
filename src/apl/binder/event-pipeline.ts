/**
 * Binds a pipeline of operators that work on one event at a time (an agent's `apl` transform:
 * `where status >= 500 | extend slow = duration > 1s | project-away secret`). Events have no schema: a name
 * no operator defined is a dynamic field of the event (`_time` a datetime), null where the event lacks it.
 * Fields an `extend` or `project` made have the type of their expression. Operators that need more than one
 * event (summarize, sort, take, join…) are refused, naming their line and column.
 */
import type { Expr, NamePattern, Operator, Query } from '../parser/ast.js';
import type { BExpr, BoundColumn, Relation } from './bound.js';
import { Expressions } from './expressions.js';
import { expressionSize, wildcardMatch } from './relation.js';
import { Scope } from './scope.js';
import { parseCaptures, parseKvCaptures, type Capture } from './parse-patterns.js';
import { redactRegexProblem, type RedactOptions } from '../functions/redact.js';

/** One operator over an event, bound. */
export type EventStage =
  | { kind: 'where'; predicate: BExpr }
  /** Sets each field in turn (an expression sees the fields set before it). */
  | { kind: 'extend'; items: { name: string; expr: BExpr }[] }
  /** The event becomes these fields, made from the event as it was. */
  | { kind: 'project'; items: { name: string; expr: BExpr }[] }
  | { kind: 'project-away'; patterns: NamePattern[] }
  | { kind: 'project-keep'; patterns: NamePattern[] }
  | { kind: 'project-rename'; items: { name: string; from: string }[] }
  /** Masks the matches of patterns in the event's string fields: those named (wildcards too), or all. */
  | { kind: 'redact'; options: RedactOptions; fields?: NamePattern[] }
  | {
      kind: 'project-reorder';
      items: { pattern: NamePattern; order?: 'asc' | 'desc' | 'granny-asc' | 'granny-desc' }[];
    };

/**
 * Bounds on a pipeline's expressions, lets written out where they are used (`let a1 = strcat(a0, a0)`
 * doubles with each line): the closures are made once per use, and a config must not be able to take the
 * agent's memory or time at load.
 */
export const EVENT_PIPELINE_LIMITS = { terms: 5000, depth: 200 };

/** Operators that work on the events of a query together, not on one event: refused in a pipeline of events. */
const MANY_EVENTS = new Set([
  'summarize',
  'sort',
  'take',
  'top',
  'count',
  'distinct',
  'getschema',
  'union',
  'join',
  'lookup',
  'mv-expand',
  'sample',
  'make-series',
  'search',
]);

/** A scope over one event with no schema, and a binder of expressions within the pipeline's bounds. */
function eventScope(src: string) {
  const scope = new Scope(src, {
    schema: () => undefined,
    nowNs: 'live',
    binAutoNs: 0n,
    rangeNs: 0n,
    datasets: () => [],
    unknownNames: 'field',
  });
  const exprs = new Expressions(scope);
  let terms = 0;
  /** An expression bound, within the pipeline's bounds. */
  const bound = (e: Expr, rel: Relation): BExpr => {
    const b = exprs.expr(e, rel);
    const size = expressionSize(b);
    terms += size.terms;
    if (size.depth > EVENT_PIPELINE_LIMITS.depth)
      scope.fail(
        `this expression nests ${size.depth} levels deep once its lets are written out, more than ${EVENT_PIPELINE_LIMITS.depth}`,
        e.pos,
      );
    if (terms > EVENT_PIPELINE_LIMITS.terms)
      scope.fail(
        `the pipeline has more than ${EVENT_PIPELINE_LIMITS.terms} terms once its lets are written out where they are used`,
        e.pos,
      );
    return b;
  };
  return { scope, bound };
}

const NO_FIELDS: Relation = { columns: [], rowIdentity: true, order: [], groups: [] };

/**
 * Binds one expression over an event (a route's condition, a sample's `keep`): every name is a field of
 * the event. With `condition`, the expression must be a bool (or a dynamic field, true only when it holds true).
 */
export function bindEventExpression(expr: Expr, src: string, condition: boolean): BExpr {
  const { scope, bound } = eventScope(src);
  const b = bound(expr, NO_FIELDS);
  if (condition && b.type !== 'bool' && b.type !== 'dynamic')
    scope.fail(`a condition must be a bool, not ${b.type}`, expr.pos);
  return b;
}

export function bindEventPipeline(query: Query, src: string): EventStage[] {
  const { scope, bound } = eventScope(src);
  const none = NO_FIELDS;
  for (const st of query.statements) {
    if (st.kind !== 'let' || st.tabular)
      return scope.fail('only scalar let statements may come before the operators of an event pipeline', st.pos);
    scope.lets.set(st.name, { kind: 'scalar', expr: bound(st.value as Expr, none) });
  }
  // The fields whose type an operator made; any other name is a dynamic field of the event.
  let known: BoundColumn[] = [];
  const stages: EventStage[] = [];
  const rel = (): Relation => ({ ...none, columns: known });
  const set = (name: string, e: BExpr) => {
    known = [...known.filter((c) => c.name !== name), { name, type: e.type, alias: name }];
  };
  for (const op of query.body.ops) {
    switch (op.op) {
      case 'where': {
        const predicate = bound(op.predicate, rel());
        if (predicate.type !== 'bool' && predicate.type !== 'dynamic')
          scope.fail(`where needs a bool predicate, not ${predicate.type}`, op.predicate.pos);
        stages.push({ kind: 'where', predicate });
        break;
      }
      case 'extend': {
        const items: { name: string; expr: BExpr }[] = [];
        for (const a of op.items) {
          const name = a.name ?? scope.derivedName(a.expr, true);
          let e = bound(a.expr, rel());
          if (op.valid)
            e = validOrKept(
              e,
              known.find((c) => c.name === name),
              name,
              a.pos,
            );
          items.push({ name, expr: e });
          set(name, e);
        }
        stages.push({ kind: 'extend', items });
        break;
      }
      case 'project': {
        const items: { name: string; expr: BExpr }[] = [];
        const before = rel();
        for (const item of op.items) {
          if ('pattern' in item) {
            if (item.pattern.wildcard)
              scope.fail(
                'a wildcard in project needs the fields of every event in advance; use project-keep',
                item.pattern.pos,
              );
            const name = item.pattern.pattern;
            items.push({ name, expr: bound({ kind: 'name', pos: item.pos, name, quoted: true }, before) });
          } else {
            const name = item.name ?? scope.derivedName(item.expr, true);
            items.push({ name, expr: bound(item.expr, before) });
          }
        }
        known = items.map((i) => ({ name: i.name, type: i.expr.type, alias: i.name }));
        stages.push({ kind: 'project', items });
        break;
      }
      case 'project-away':
      case 'project-keep': {
        const { patterns } = op;
        const matches = (name: string) =>
          patterns.some((p) => (p.wildcard ? wildcardMatch(p.pattern, name) : p.pattern === name));
        known = known.filter((c) => matches(c.name) === (op.op === 'project-keep'));
        stages.push({ kind: op.op, patterns });
        break;
      }
      case 'project-rename': {
        for (const item of op.items) {
          const c = known.find((k) => k.name === item.from);
          known = known.filter((k) => k.name !== item.from && k.name !== item.name);
          if (c) known.push({ ...c, name: item.name, alias: item.name });
        }
        stages.push({ kind: 'project-rename', items: op.items.map((i) => ({ name: i.name, from: i.from })) });
        break;
      }
      case 'project-reorder':
        stages.push({ kind: 'project-reorder', items: op.items });
        break;
      case 'parse':
      case 'parse-where':
      case 'parse-kv': {
        // The fields a parse captures are set as an extend sets them (null where the text does not match).
        const text = bound(op.expr, rel());
        let captures: Capture[];
        if (op.op === 'parse-kv') captures = parseKvCaptures(op, text);
        else {
          const parsed = parseCaptures(op, text);
          if (op.op === 'parse-where') stages.push({ kind: 'where', predicate: parsed.matches });
          captures = parsed.captures;
        }
        const items = captures.map((c) => ({ name: c.name, expr: c.expr }));
        for (const i of items) set(i.name, i.expr);
        stages.push({ kind: 'extend', items });
        break;
      }
      case 'redact': {
        for (const p of op.patterns) {
          const problem = redactRegexProblem(p.regex);
          if (problem) scope.fail(`redact: ${problem}`, p.pos);
        }
        stages.push({
          kind: 'redact',
          options: {
            patterns: op.patterns.map((p) => p.regex),
            token: op.replaceToken,
            hash: op.replaceHash,
            groups: op.redactGroups,
          },
          fields: op.fields,
        });
        break;
      }
      default:
        refuse(scope, op);
    }
  }
  return stages;
}

/**
 * extend-valid: the value where it is valid, else the field as it was. A field no operator typed is the
 * event's own, of any type: the result is then dynamic, so it keeps whatever the field held.
 */
function validOrKept(e: BExpr, old: BoundColumn | undefined, name: string, pos: number): BExpr {
  const kept: BExpr = old
    ? { k: 'col', type: old.type, alias: old.alias, name: old.name }
    : { k: 'col', type: 'dynamic', alias: name, name, open: true };
  const valid: BExpr = { k: 'call', type: 'bool', fn: 'valid#', args: [e], pos };
  return { k: 'call', type: kept.type === e.type ? e.type : 'dynamic', fn: 'iff', args: [valid, e, kept], pos };
}

function refuse(scope: Scope, op: Operator): never {
  const name = op.op === 'unsupported' ? op.name : op.op;
  if (MANY_EVENTS.has(name))
    scope.fail(
      `${name} works on many events together; a transform sees one event at a time (use it in a query or a monitor)`,
      op.pos,
    );
  return scope.fail(
    `${name} is not available in an event pipeline (where, extend, extend-valid, project, project-away, project-keep, project-rename, project-reorder, parse, parse-where, parse-kv and redact are)`,
    op.pos,
  );
}
